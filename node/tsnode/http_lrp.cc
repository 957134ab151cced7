// The desired-LRP calls of the HTTP port; see http_lrp.h.
#include "node/tsnode/http_lrp.h"

#include <string>
#include <utility>

namespace ts::tsnode {

namespace {

constexpr std::pair<std::string_view, const char*> kCalls[] = {
    {"update", "update"}, {"cancel_update", "cancel"}, {"rollback", "rollback"}};

}  // namespace

StatusOr<rpc::ClientRequest> LrpRequestFromHttp(std::string_view method, std::string_view call,
                                                const StatusOr<nlohmann::json>& body) {
  const char* op = nullptr;
  for (const auto& [name, o] : kCalls) {
    if (call == name) op = o;
  }
  if (op == nullptr) {
    return Status::InvalidArgument("no call /v1/desired_lrp/" + std::string(call.substr(0, 64)) +
                                   ": the calls are update, cancel_update and rollback");
  }
  if (method != "POST") return Status::InvalidArgument("/v1/desired_lrp/" + std::string(call) + " takes POST");
  if (!body.ok()) return body.status();
  if (!body->contains("process_guid")) return Status::InvalidArgument("the body needs \"process_guid\"");
  for (const char* f : {"kind", "op"}) {
    if (body->contains(f)) {
      return Status::InvalidArgument(std::string("the body may not hold \"") + f + "\": the call names the command");
    }
  }
  nlohmann::json cmd = *body;
  cmd["kind"] = "lrp";
  cmd["op"] = op;
  rpc::ClientRequest req;
  req.op = rpc::ClientOp::kDeploy;
  req.value = cmd.dump();
  return req;
}

}  // namespace ts::tsnode

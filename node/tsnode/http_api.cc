// The HTTP JSON API; see http_api.h.
#include "node/tsnode/http_api.h"

#include "node/tsctl/tsctl_txn.h"
#include "node/tsnode/http_lrp.h"

#include <nlohmann/json.hpp>

#include <array>
#include <charconv>
#include <optional>

#include "node/tsctl/tsctl_format.h"
#include "node/tsctl/tsctl_range.h"
#include "node/tsctl/tsctl_txn.h"
#include "rpc/roles.h"

namespace ts::tsnode {

using rpc::ClientCode;
using rpc::ClientOp;

namespace {


StatusOr<uint64_t> Number(std::string_view text, const char* what) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return Status::InvalidArgument(std::string(what) + " '" + std::string(text) + "' is not a number");
  }
  return v;
}

StatusOr<nlohmann::json> ParseBody(std::string_view body) {
  if (body.empty()) return nlohmann::json::object();
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::InvalidArgument("the body is not a JSON object");
  return j;
}

// The fields of a request from a JSON object (for /v1/request, /v1/cas
// and puts).
// A write in a session (docs/design/sessions.md): "session", "seq" and
// "lowest_pending" (default: seq); a session's "ttl_ms".
Status FillSessionFields(const nlohmann::json& j, rpc::ClientRequest* req) {
  for (const char* f : {"session", "seq", "lowest_pending", "ttl_ms"}) {
    if (!j.contains(f)) continue;
    if (!j[f].is_number_unsigned()) return Status::InvalidArgument(std::string("\"") + f + "\" must be a number");
    uint64_t v = j[f].get<uint64_t>();
    std::string_view name(f);
    if (name == "session") req->session = v;
    else if (name == "seq") req->seq = v;
    else if (name == "lowest_pending") req->lowest_pending = v;
    else req->ttl_ms = v;
  }
  if (req->session != 0 && req->seq == 0) return Status::InvalidArgument("a write in a session needs \"seq\" (from 1)");
  if (req->session != 0 && !j.contains("lowest_pending")) req->lowest_pending = req->seq;
  return Status::Ok();
}

Status FillFromJson(const nlohmann::json& j, rpc::ClientRequest* req) {
  if (j.contains("key")) {
    if (!j["key"].is_string()) return Status::InvalidArgument("\"key\" must be a string");
    req->key = j["key"].get<std::string>();
  }
  auto value = tsctl::BytesField(j, "value", false);
  if (!value.ok()) return value.status();
  req->value = std::move(*value);
  auto expected = tsctl::BytesField(j, "expected", false);
  if (!expected.ok()) return expected.status();
  req->expected = std::move(*expected);
  if (j.contains("expected_absent")) {
    if (!j["expected_absent"].is_boolean()) return Status::InvalidArgument("\"expected_absent\" must be true or false");
    req->expected_absent = j["expected_absent"].get<bool>();
  }
  for (const char* f : {"from_slot", "limit", "offset"}) {
    if (!j.contains(f)) continue;
    if (!j[f].is_number_unsigned()) return Status::InvalidArgument(std::string("\"") + f + "\" must be a number");
    uint64_t v = j[f].get<uint64_t>();
    if (std::string_view(f) == "from_slot") req->from_slot = v;
    else if (std::string_view(f) == "limit") req->limit = static_cast<uint32_t>(std::min<uint64_t>(v, UINT32_MAX));
    else req->offset = v;
  }
  return FillSessionFields(j, req);
}

// Sessions and leases have one shape of calls:
//   POST /v1/R {"ttl_ms": N}: create; POST /v1/R/ID/keepalive; DELETE /v1/R/ID:
//   end; GET /v1/R: list (leases).
struct TimedCalls {
  const char* what;  // "session", "lease"
  ClientOp create, keepalive, end;
  std::optional<ClientOp> list;
  uint64_t rpc::ClientRequest::*id;
};

StatusOr<rpc::ClientRequest> TimedRoute(std::string_view method, std::string_view rest,
                                        const StatusOr<nlohmann::json>& json, const TimedCalls& c) {
  rpc::ClientRequest req;
  const std::string what = c.what;
  const std::string usage = what + "s: POST /v1/" + what + (c.list ? ", GET /v1/" + what : std::string()) +
                            ", POST /v1/" + what + "/ID/keepalive, DELETE /v1/" + what + "/ID";
  if (rest.empty() && method == "GET" && c.list) {
    req.op = *c.list;
    return req;
  }
  if (rest.empty() && method == "POST") {
    if (!json.ok()) return json.status();
    req.op = c.create;
    if (Status s = FillSessionFields(*json, &req); !s.ok()) return s;
    if (req.ttl_ms == 0) return Status::InvalidArgument("the body needs \"ttl_ms\": the " + what + "'s timeout");
    return req;
  }
  std::string_view id = rest.substr(0, rest.find('/'));
  std::string_view action = rest.size() > id.size() ? rest.substr(id.size() + 1) : std::string_view();
  auto v = Number(id, (what + " id").c_str());
  if (!v.ok() || *v == 0) return Status::InvalidArgument("the path is /v1/" + what + "/ID with a " + what + " id");
  req.*c.id = *v;
  if (method == "DELETE" && action.empty()) {
    req.op = c.end;
  } else if (method == "POST" && action == "keepalive") {
    req.op = c.keepalive;
  } else {
    return Status::InvalidArgument(usage);
  }
  return req;
}

}  // namespace

StatusOr<ClientOp> ClientOpFromName(std::string_view name) {
  std::string known;
  for (uint8_t i = 1; i <= static_cast<uint8_t>(rpc::kLastClientOp); ++i) {
    auto op = static_cast<ClientOp>(i);
    if (name == rpc::ClientOpName(op)) return op;
    known += (known.empty() ? "" : ", ") + std::string(rpc::ClientOpName(op));
  }
  return Status::InvalidArgument("unknown op '" + std::string(name) + "': one of " + known);
}

StatusOr<rpc::ClientRequest> RequestFromHttp(std::string_view method, std::string_view route, std::string_view rest,
                                             std::string_view body, std::string_view from_slot,
                                             std::string_view limit) {
  rpc::ClientRequest req;
  auto json = ParseBody(body);
  if (route == "kv") {
    if (rest.empty()) return Status::InvalidArgument("no key: the path is /v1/kv/KEY");
    req.key = std::string(rest);
    if (method == "GET") {
      req.op = ClientOp::kGet;
    } else if (method == "DELETE") {
      req.op = ClientOp::kDelete;
    } else if (method == "PUT" || method == "POST") {
      if (!json.ok()) return json.status();
      auto value = tsctl::BytesField(*json, "value", true);
      if (!value.ok()) return value.status();
      req.op = ClientOp::kPut;
      req.value = std::move(*value);
      if (json->contains("lease")) {
        if (!(*json)["lease"].is_number_unsigned()) return Status::InvalidArgument("\"lease\" must be a lease id");
        req.lease = (*json)["lease"].get<uint64_t>();
      }
      if (Status s = FillSessionFields(*json, &req); !s.ok()) return s;
    } else {
      return Status::InvalidArgument("/v1/kv/KEY takes GET, PUT and DELETE, not " + std::string(method));
    }
    return req;
  }
  if (route == "deploy") {
    if (method == "GET") {
      req.op = ClientOp::kDeployQuery;
      req.key = std::string(rest);
      return req;
    }
    if (method != "POST" || !rest.empty()) return Status::InvalidArgument("deployment commands are POST /v1/deploy");
    if (!json.ok()) return json.status();
    req.op = ClientOp::kDeploy;
    req.value = std::string(body);
    if (Status s = FillSessionFields(*json, &req); !s.ok()) return s;
    return req;
  }
  if (route == "desired_lrp") {
    auto lrp = LrpRequestFromHttp(method, rest, json);
    if (lrp.ok()) {
      if (Status s = FillSessionFields(*json, &*lrp); !s.ok()) return s;
    }
    return lrp;
  }
  if (route == "txn") {
    if (method != "POST" || !rest.empty()) return Status::InvalidArgument("a transaction is POST /v1/txn");
    if (!json.ok()) return json.status();
    auto txn = tsctl::TxnFromJson(*json);
    if (!txn.ok()) return txn.status();
    req.op = ClientOp::kTxn;
    req.txn = std::move(*txn);
    if (Status s = FillSessionFields(*json, &req); !s.ok()) return s;
    return req;
  }
  if (route == "lease") {
    return TimedRoute(method, rest, json, {"lease", ClientOp::kLeaseGrant, ClientOp::kLeaseKeepAlive,
                                           ClientOp::kLeaseRevoke, ClientOp::kLeaseList, &rpc::ClientRequest::lease});
  }
  if (route == "session") {
    return TimedRoute(method, rest, json, {"session", ClientOp::kSessionOpen, ClientOp::kSessionKeepAlive,
                                           ClientOp::kSessionClose, std::nullopt, &rpc::ClientRequest::session});
  }
  if (route == "status" || route == "log") {
    if (method != "GET") return Status::InvalidArgument("/v1/" + std::string(route) + " takes GET");
    req.op = route == "status" ? ClientOp::kStatus : ClientOp::kLog;
    if (!from_slot.empty()) {
      auto v = Number(from_slot, "from");
      if (!v.ok()) return v.status();
      req.from_slot = *v;
    }
    if (!limit.empty()) {
      auto v = Number(limit, "limit");
      if (!v.ok()) return v.status();
      req.limit = static_cast<uint32_t>(std::min<uint64_t>(*v, UINT32_MAX));
    }
    return req;
  }
  if (route == "cas" || route == "request") {
    if (method != "POST") return Status::InvalidArgument("/v1/" + std::string(route) + " takes POST");
    if (!json.ok()) return json.status();
    if (route == "cas") {
      req.op = ClientOp::kCas;
      if (!json->contains("key")) return Status::InvalidArgument("the body needs \"key\"");
      if (!json->contains("value") && !json->contains("value_base64")) {
        return Status::InvalidArgument("the body needs \"value\" or \"value_base64\"");
      }
    } else {
      if (!json->contains("op") || !(*json)["op"].is_string()) {
        return Status::InvalidArgument("the body needs \"op\": put, get, cas, delete, ...");
      }
      auto op = ClientOpFromName((*json)["op"].get<std::string>());
      if (!op.ok()) return op.status();
      req.op = *op;
      // A put names its value, as PUT /v1/kv/KEY does ("value": "" stores an empty one).
      if (req.op == ClientOp::kPut && !json->contains("value") && !json->contains("value_base64")) {
        return Status::InvalidArgument("a put needs \"value\" or \"value_base64\" (\"value\": \"\" for an empty value)");
      }
    }
    if (Status s = FillFromJson(*json, &req); !s.ok()) return s;
    return req;
  }
  return Status::NotFound("no such API: /v1/" + std::string(route));
}

int HttpStatusOf(ClientCode code) {
  switch (code) {
    case ClientCode::kOk: return 200;
    case ClientCode::kNotLeader: return 421;
    case ClientCode::kCompareFailed: return 412;
    case ClientCode::kNotFound: return 404;
    case ClientCode::kBadRequest: return 400;
    case ClientCode::kUnavailable: return 503;
    case ClientCode::kBusy: return 429;
    case ClientCode::kInternal: return 500;
    case ClientCode::kOutcomeUnknown: return 504;
    case ClientCode::kPermissionDenied: return 403;
    case ClientCode::kUnsupported: return 501;  // the node's release does not know the op
    case ClientCode::kSessionUnknown: return 410;  // gone: closed or expired
    case ClientCode::kCompacted: return 410;       // gone: the watch's start slot is no longer kept
  }
  return 500;
}

HttpAnswer AnswerToHttp(ClientOp op, const rpc::ClientResponse& r, const rpc::Txn* txn) {
  nlohmann::json j;
  j["code"] = rpc::ClientCodeName(r.code);
  if (!r.message.empty()) j["message"] = r.message;
  if (!r.node_version.empty()) j["node_version"] = r.node_version;
  if (!r.leader_hint.empty()) j["leader_hint"] = r.leader_hint;
  if (r.slot != 0) j["slot"] = r.slot;
  switch (op) {
    case ClientOp::kGet:
    case ClientOp::kCas:
      j["found"] = r.found;
      if (r.found || !r.value.empty()) {
        tsctl::SetBytes(j, "value", r.value);
      }
      if (op == ClientOp::kGet && r.found) {
        j["mod_slot"] = r.mod_slot;
        j["lease"] = r.lease;
      }
      break;
    case ClientOp::kTxn:
      if (r.code == ClientCode::kOk && txn != nullptr) {
        nlohmann::json t = tsctl::TxnAnswerJson(*txn, r);
        j["succeeded"] = t["succeeded"];
        j["results"] = std::move(t["results"]);
      }
      break;
    case ClientOp::kLeaseGrant:
    case ClientOp::kLeaseKeepAlive:
      if (r.code == ClientCode::kOk) {
        j["lease"] = r.lease;
        j["ttl_ms"] = r.ttl_ms;
      }
      break;
    case ClientOp::kLeaseList:
      if (r.code == ClientCode::kOk) j["leases"] = tsctl::LeasesJson(r.leases);
      break;
    case ClientOp::kRange:
      if (r.code == ClientCode::kOk) j.update(tsctl::RangeAnswerJson(r));
      break;
    case ClientOp::kDeployQuery:
    case ClientOp::kDeploy: {
      if (op == ClientOp::kDeployQuery && r.code == ClientCode::kOk) {
        j["serializable"] = (r.range_flags & rpc::kRangeSerializable) != 0;  // read without the leader's lease
      }
      if (r.value.empty()) break;
      auto v = nlohmann::json::parse(r.value, nullptr, false);
      if (!v.is_discarded()) j["result"] = std::move(v);
      else j["value"] = r.value;
      break;
    }
    case ClientOp::kStatus:
      if (r.code == ClientCode::kOk) {
        rpc::HostPort self;
        nlohmann::json all = tsctl::StatusJson({self}, {StatusOr<rpc::NodeStatus>(r.status)});
        j["status"] = all["nodes"][0];
        j["status"].erase("endpoint");
      }
      break;
    case ClientOp::kLog:
      if (r.code == ClientCode::kOk) j["log"] = tsctl::LogJson(0, r.log)["rows"];
      break;
    case ClientOp::kMember:
      if (r.code == ClientCode::kOk) j["members"] = tsctl::MembersJson(r.status);
      break;
    case ClientOp::kSnapshot:
    case ClientOp::kSnapshotRead:
      j["total"] = r.total;
      if (op == ClientOp::kSnapshotRead) j["value_base64"] = Base64Encode(r.value);
      break;
    default:
      if (!r.value.empty()) tsctl::SetBytes(j, "value", r.value);
      break;
  }
  return {HttpStatusOf(r.code), tsctl::DumpJson(j)};
}

HttpAnswer ErrorToHttp(ClientCode code, const std::string& message) {
  nlohmann::json j = {{"code", rpc::ClientCodeName(code)}, {"message", message}};
  return {HttpStatusOf(code), tsctl::DumpJson(j)};
}

}  // namespace ts::tsnode

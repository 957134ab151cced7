// The HTTP API's range reads; see http_range.h.
#include "node/tsnode/http_range.h"

#include <charconv>

#include "node/tsctl/tsctl_format.h"

namespace ts::tsnode {

StatusOr<bool> QueryFlag(const QueryParam& param, const char* name) {
  std::optional<std::string> v = param(name);
  if (!v) return false;
  if (v->empty() || *v == "true" || *v == "1") return true;
  if (*v == "false" || *v == "0") return false;
  return Status::InvalidArgument(std::string(name) + " must be true, false, 1 or 0, not '" + *v + "'");
}

StatusOr<rpc::ClientRequest> RangeRequestFromHttp(const QueryParam& param) {
  rpc::ClientRequest req;
  req.op = rpc::ClientOp::kRange;
  req.limit = kHttpRangeLimitDefault;
  std::optional<std::string> prefix = param("prefix"), prefix_base64 = param("prefix_base64");
  if (prefix && prefix_base64) return Status::InvalidArgument("give prefix or prefix_base64, not both");
  if (prefix) req.key = *prefix;
  if (prefix_base64) {
    auto bytes = tsctl::Base64Decode(*prefix_base64);
    if (!bytes.ok()) return Status::InvalidArgument("prefix_base64: " + bytes.status().message());
    req.key = std::move(*bytes);
  }
  if (std::optional<std::string> limit = param("limit")) {
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(limit->data(), limit->data() + limit->size(), v);
    if (ec != std::errc() || end != limit->data() + limit->size() || v == 0) {
      return Status::InvalidArgument("limit must be a number of entries, 1 or more, not '" + *limit + "'");
    }
    req.limit = static_cast<uint32_t>(std::min<uint64_t>(v, UINT32_MAX));
  }
  if (std::optional<std::string> after = param("after")) req.after = *after;
  const std::pair<const char*, uint8_t> flags[] = {
      {"keys_only", rpc::kRangeKeysOnly}, {"count", rpc::kRangeCountOnly}, {"serializable", rpc::kRangeSerializable}};
  for (const auto& [name, bit] : flags) {
    auto on = QueryFlag(param, name);
    if (!on.ok()) return on.status();
    if (*on) req.range_flags |= bit;
  }
  return req;
}

}  // namespace ts::tsnode

// ClientRequests: range reads (docs/design/ranges.md). A linearizable page
// takes the path of a get (the leader, under its lease, once it has applied
// what its lease covers); a serializable one is read at once from this
// node's applied state, on any node. The page itself is kv_range.h's.
#include <algorithm>

#include "node/station/client_requests.h"
#include "node/station/kv_range.h"
#include "node/station/station.h"

namespace ts::station {

using rpc::ClientCode;
using rpc::ClientRequest;
using rpc::ClientResponse;

void ClientRequests::HandleRange(uint64_t handle, ClientRequest&& req) {
  // Checked before any waiting, so a bad token is refused by any node.
  if (std::string why = RangeRequestRefusal(req, st_.cluster_uuid(), st_.options_.key_bytes_max); !why.empty()) {
    return st_.Respond(handle, Answer(req.id, ClientCode::kBadRequest, why));
  }
  if ((req.range_flags & rpc::kRangeSerializable) == 0) return HandleRead(handle, std::move(req));
  ClientResponse resp;
  resp.id = req.id;
  resp.slot = st_.applied_slot_;
  st_.Respond(handle, RangeAnswer(req, std::move(resp)));
}

ClientResponse ClientRequests::RangeAnswer(const ClientRequest& req, ClientResponse resp) const {
  RangeBounds bounds;
  bounds.bytes_max = std::min(st_.options_.range_page_bytes_max, kRangePageBytesMax);
  resp.range_flags = req.range_flags;  // the answer says what it is
  if (Status s = ReadRange(st_.kv_, st_.cluster_uuid(), req, bounds, &resp); !s.ok()) {
    return Answer(req.id, ClientCode::kBadRequest, s.message());
  }
  return resp;
}

}  // namespace ts::station

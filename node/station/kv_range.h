// Range reads of the key-value store (docs/design/ranges.md): one bounded
// page of the keys under a prefix, in key order, and the token that
// continues it on the next page. Pure functions of a KvStore; the station
// decides when a page may be read (client_range.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "consensus/status.h"
#include "node/station/kv_store.h"
#include "rpc/client_protocol.h"

namespace ts::station {

// A page holds at most this many entries, whatever the limit asked; a
// larger limit is clamped (the answer says more follow).
inline constexpr uint32_t kRangeEntriesMax = 10'000;
// A counting page counts at most this many keys (then says more follow, with
// the token of the last key it counted): a count holds the node's loop for a
// bounded time, whatever the prefix holds.
inline constexpr uint64_t kRangeCountMax = 100'000;
// The largest page, in bytes of keys and values, a node may be configured
// with (StationOptions::range_page_bytes_max). A single entry larger than
// the page's bound still goes, alone in its page.
inline constexpr size_t kRangePageBytesMax = 4u << 20;

// What a token names: the cluster that issued it, the prefix it pages
// through and the last key it returned (the next page starts past it).
struct RangeToken {
  std::string cluster_uuid;
  std::string prefix;
  std::string last_key;  // starts with prefix
};

// The token's text: lowercase hex of (format byte, the UUID, the prefix's
// length, the last key, a CRC-32C of all that). Opaque to clients.
std::string EncodeRangeToken(const RangeToken& t);
// InvalidArgument, saying why, for text that is not a token this code wrote.
StatusOr<RangeToken> DecodeRangeToken(std::string_view text);

struct RangeBounds {
  uint32_t entries_max = kRangeEntriesMax;
  size_t bytes_max = kRangePageBytesMax;
  uint64_t count_max = kRangeCountMax;
};

// The checks of a range request that need no state: the prefix's length
// (at most key_bytes_max), the limit (1 or more, unless counting) and the
// token's form and cluster. Empty: it may be served.
std::string RangeRequestRefusal(const rpc::ClientRequest& req, const std::string& cluster_uuid,
                                size_t key_bytes_max);

// One page of `kv` for `req` (op kRange: prefix in key, limit, after,
// range_flags), into `resp`: range (none when counting: total counts the
// keys instead), and with more keys to come kRangeMore in range_flags and
// the token of the next page in range_after. `cluster_uuid` is the one the tokens name.
// InvalidArgument when the token is malformed or is another cluster's or
// another prefix's; resp is then untouched.
Status ReadRange(const KvStore& kv, const std::string& cluster_uuid, const rpc::ClientRequest& req,
                 const RangeBounds& bounds, rpc::ClientResponse* resp);

}  // namespace ts::station

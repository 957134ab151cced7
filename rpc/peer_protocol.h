// Peer handshake: the first frame on every peer connection, in both
// directions. A node refuses a peer from another cluster, or with an id that
// is not a configured member, with a HandshakeAck carrying the reason, then
// closes the connection.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "consensus/types.h"

namespace ts::rpc {

// The wire version an archive writes or reads (rpc/codec_impl.h defines it).
template <class A>
uint8_t WireVersionOf(const A& ar);

struct Handshake {
  std::string cluster_id;  // the readable name (--cluster-id)
  consensus::NodeId node_id = 0;
  std::string software_version;        // semver
  std::string client_addr;             // host:port of its client port (leader hints)
  std::vector<uint32_t> format_versions;  // decree-format versions it reads
  // The cluster's identity: a random UUID created once, at bootstrap (the
  // genesis decree), stored in every data dir. Empty while the node has not
  // learned it yet (a bootstrap member before genesis, or an empty data dir
  // joining an existing cluster).
  std::string cluster_uuid;
  // The identity of this node's acceptor state: 0 for a bootstrap member's
  // first data dir, a fresh random number for every data dir created after.
  // A quorum counts a vote only from the incarnation the membership binds.
  uint64_t incarnation = 0;
  // The wire versions the sender reads and writes (rpc/frame.h). A 1.1.0
  // node sends neither; it speaks 1 only.
  uint32_t wire_version_min = 1;
  uint32_t wire_version_max = 1;

  template <class A>
  void serialize(A& ar) {
    ar(cluster_id, node_id, software_version, client_addr, format_versions, cluster_uuid, incarnation);
    if (WireVersionOf(ar) >= 2) ar(wire_version_min, wire_version_max);
  }
};

struct HandshakeAck {
  bool ok = false;
  std::string reason;  // why refused
  consensus::NodeId node_id = 0;
  std::string software_version;
  std::string cluster_uuid;  // the acknowledging node's, as in Handshake
  uint64_t incarnation = 0;
  uint32_t wire_version_min = 1;  // as in Handshake
  uint32_t wire_version_max = 1;

  template <class A>
  void serialize(A& ar) {
    ar(ok, reason, node_id, software_version, cluster_uuid, incarnation);
    if (WireVersionOf(ar) >= 2) ar(wire_version_min, wire_version_max);
  }
};

// In a wire-version-1 handshake the range rides in format_versions, one
// entry kWireVersionTag | v per version spoken (see rpc/codec.h).
inline constexpr uint32_t kWireVersionTag = 0x57560000;  // "VW" in the high half
inline constexpr uint32_t kWireVersionTagMask = 0xffff0000;

// Why a node refuses a peer's handshake, or empty to accept it: another
// cluster name, or another cluster identity (both non-empty and different).
// Both identities are named. An empty identity on either side is accepted:
// that side learns the other's (docs/design/membership.md#cluster-identity).
std::string HandshakeRefusal(const Handshake& ours, const Handshake& theirs);

inline std::string HandshakeRefusal(const Handshake& ours, const Handshake& theirs) {
  auto name = [](const Handshake& h) {
    return "cluster '" + h.cluster_id + "' (" + (h.cluster_uuid.empty() ? std::string("identity not yet known") : "uuid " + h.cluster_uuid) + ")";
  };
  if (theirs.cluster_id != ours.cluster_id || (!theirs.cluster_uuid.empty() && !ours.cluster_uuid.empty() &&
                                               theirs.cluster_uuid != ours.cluster_uuid)) {
    return "node " + std::to_string(theirs.node_id) + " belongs to " + name(theirs) + ", this node " +
           std::to_string(ours.node_id) + " to " + name(ours) + ": another cluster's node or data dir";
  }
  return "";
}

}  // namespace ts::rpc

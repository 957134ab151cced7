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

struct Handshake {
  std::string cluster_id;
  consensus::NodeId node_id = 0;
  std::string software_version;        // semver
  std::string client_addr;             // host:port of its client port (leader hints)
  std::vector<uint32_t> format_versions;  // decree-format versions it reads

  template <class A>
  void serialize(A& ar) { ar(cluster_id, node_id, software_version, client_addr, format_versions); }
};

struct HandshakeAck {
  bool ok = false;
  std::string reason;  // why refused
  consensus::NodeId node_id = 0;
  std::string software_version;

  template <class A>
  void serialize(A& ar) { ar(ok, reason, node_id, software_version); }
};

}  // namespace ts::rpc

// DigestWatch: compares this node's state digests with its peers' at the
// same applied slots. Every node records its state digest at checkpoint
// slots (Station, --digest-checkpoint-slots); every few seconds this asks
// each peer's client port for its status and compares the checkpoints both
// hold. Equal decrees applied in the same order must give equal states, so
// a difference means a node's state went wrong (a bug, a bad disk, a bad
// upgrade): it is logged as an error, once per peer and slot, and counted.
// Runs on the node's event loop; a peer that does not answer is skipped.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <asio.hpp>

#include "consensus/types.h"
#include "rpc/client_connection.h"
#include "rpc/client_protocol.h"

namespace ts::tsnode {

struct DigestMismatch {
  consensus::NodeId peer = 0;
  uint64_t slot = 0;
  std::string ours, theirs;
};

// The checkpoints both lists hold whose digests differ.
std::vector<DigestMismatch> CompareCheckpoints(consensus::NodeId peer, const std::vector<rpc::DigestCheckpoint>& ours,
                                               const std::vector<rpc::DigestCheckpoint>& theirs);

class DigestWatch {
 public:
  using PeerAddrs = std::function<std::map<consensus::NodeId, std::string>()>;
  using Ours = std::function<std::vector<rpc::DigestCheckpoint>()>;
  DigestWatch(asio::io_context& io, std::shared_ptr<rpc::TlsContext> tls, std::chrono::milliseconds period,
              PeerAddrs peers, Ours ours, uint64_t* mismatches);
  ~DigestWatch();
  void Start();
  void Stop();

 private:
  struct Peer {
    std::string addr;
    std::unique_ptr<rpc::AsyncClient> client;
    bool connected = false;
    bool asking = false;
    std::set<uint64_t> reported;  // slots already logged
  };
  void Round();
  void Ask(consensus::NodeId id, Peer& p);
  void Compare(consensus::NodeId id, const rpc::NodeStatus& theirs);

  asio::io_context& io_;
  std::shared_ptr<rpc::TlsContext> tls_;
  std::chrono::milliseconds period_;
  PeerAddrs peer_addrs_;
  Ours ours_;
  uint64_t* mismatches_;
  asio::steady_timer timer_;
  std::map<consensus::NodeId, Peer> peers_;
  std::shared_ptr<char> life_ = std::make_shared<char>();
};

}  // namespace ts::tsnode

// Node: one tsnode process. Wires the consensus core to RocksDB storage, the
// peer transport and the client port, and applies chosen decrees to the
// key-value store. Everything runs on one thread around one io_context:
//
//   loop: wait for I/O or the next tick -> run every ready handler (each
//         Step/Propose accumulates into the core) -> Tick -> Flush: one
//         synced write per Ready, then send, then apply -> serve reads.
//
// So a burst of messages and client requests costs one fsync, not one each.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include <asio.hpp>

#include "consensus/replica.h"
#include "node/decree.h"
#include "node/deploy/deploy_state.h"
#include "node/kv_store.h"
#include "node/version_state.h"
#include "rpc/client_protocol.h"
#include "rpc/transport.h"
#include "storage/log_store.h"

namespace ts::node {

struct NodeOptions {
  consensus::NodeId id = 0;
  std::map<consensus::NodeId, rpc::HostPort> members;  // peer address of every member, self included
  rpc::HostPort client_addr;
  std::string data_dir;
  std::string cluster_id = "ts";
  std::string software_version;
  uint64_t heartbeat_ms = 20;
  uint64_t lease_ms = 100;
  uint64_t drift_ms = 15;
  uint64_t election_jitter_ms = 50;
  size_t frame_bytes_max = rpc::kDefaultFrameBytesMax;
  uint64_t request_timeout_ms = 5000;   // a write not chosen by then: "outcome unknown"
  size_t pending_requests_max = 65536;  // writes and reads waiting; Busy beyond
  size_t key_bytes_max = 4096;
  size_t value_bytes_max = 1 << 20;
  bool fault_injection = false;  // accept ClientOp::kFault (tests and nemesis.sh only)
  uint64_t health_period_ms = 1000;  // the coordinator's health-controller loop (spec/002_*)
  size_t deploy_queue_max = 1024;    // deployment commands waiting for the coordinator; Busy beyond
};

class Node {
 public:
  explicit Node(NodeOptions options);
  ~Node();

  // Opens storage (checking the data dir's identity), replays the chosen
  // log into the key-value store and binds both ports. A non-OK status says
  // exactly what is wrong; nothing has been started then.
  Status Start();

  // Runs the loop until SIGINT/SIGTERM or Stop(). A storage failure aborts
  // the process after logging it (never retry an fsync).
  void Run();
  void Stop();

 private:
  struct PendingWrite {
    RequestTag tag;
    rpc::ClientOp op;
    rpc::ClientServer::Responder respond;
    uint64_t request_id;
    uint64_t deadline_ms;
  };
  struct PendingRead {
    rpc::ClientRequest req;
    rpc::ClientServer::Responder respond;
    uint64_t deadline_ms;
  };

  uint64_t NowMs() const;
  void OnPeerMessage(consensus::Message&& m);
  void OnClientRequest(rpc::ClientRequest&& req, rpc::ClientServer::Responder respond);
  void HandleWrite(rpc::ClientRequest&& req, rpc::ClientServer::Responder respond);
  void Flush();
  void RememberVersion(consensus::NodeId id, const std::string& version);
  void Apply(const consensus::Entry& e);
  // Applies one readable decree; false if this node cannot read it.
  bool ApplyDecree(consensus::Slot slot, const std::string& bytes, bool replay_only);
  // `deploy` is the outcome of a deployment decree (nullptr for others).
  void ReplyToWrite(consensus::Slot slot, const Decree* d, const KvResult& result,
                    const StatusOr<std::string>* deploy = nullptr);
  // node_deploy.cc: the recovery supervisor and coordinator (issue 4).
  void HandleDeploy(rpc::ClientRequest&& req, rpc::ClientServer::Responder respond);
  void HandleDeployQuery(const rpc::ClientRequest& req, rpc::ClientServer::Responder respond);
  void ApplyDeploy(consensus::Slot slot, const Decree& d, bool replay_only);
  void SuperviseCoordinator();
  void StopCoordinator(const std::string& why);
  std::string StateDigest() const;
  // node_versions.cc: the version rules of spec/003_*.
  void UpdateEligibility();
  void MaybeProposeMarker();
  bool TryResumeWithRewrites(consensus::Slot downgrade_slot, const Downgrade& g);
  void HandleDowngrade(rpc::ClientRequest&& req, rpc::ClientServer::Responder respond);
  void MaybeProposeDowngrade();
  StatusOr<std::vector<Rewrite>> RewritesFor(const Semver& target) const;
  void HandleFault(const rpc::ClientRequest& req, rpc::ClientServer::Responder respond);
  void ServeReads();
  void ExpireWrites();
  void LogRoleChange();
  rpc::ClientResponse Redirect(const rpc::ClientRequest& req, const std::string& why) const;
  rpc::NodeStatus BuildStatus() const;
  rpc::ClientResponse BuildLog(const rpc::ClientRequest& req) const;
  std::string ClientAddrOf(consensus::NodeId id) const;

  NodeOptions options_;
  asio::io_context io_;
  std::unique_ptr<storage::LogStore> store_;
  std::unique_ptr<consensus::Replica> replica_;
  std::unique_ptr<rpc::PeerTransport> transport_;
  std::unique_ptr<rpc::ClientServer> clients_;
  asio::signal_set signals_;
  std::chrono::steady_clock::time_point start_;
  bool stopping_ = false;

  KvStore kv_;
  LogDigest digest_;                  // over every chosen decree, read or not
  consensus::Slot applied_slot_ = 0;  // last decree applied to the state
  std::optional<consensus::Slot> stuck_at_;  // first decree we could not read
  VersionState versions_;
  Eligibility eligibility_;
  consensus::Ballot marker_checked_;  // leadership whose marker duty is done
  // A downgrade (or cancellation) asked of this leader, waiting until every
  // decree it proposed before the request (up to `after`) is applied; or a
  // restatement of the downgrade in force (`restate`, no client).
  struct PendingDowngrade {
    Downgrade g;  // target or cancel; rewrites are filled in when proposed
    consensus::Ballot ballot;
    consensus::Slot after = 0;
    rpc::ClientRequest req;
    rpc::ClientServer::Responder respond;  // null for a restatement
    uint64_t deadline_ms = 0;
    bool restate = false;
  };
  std::optional<PendingDowngrade> pending_downgrade_;

  // Recovery coordinator (runs only while this node may: see SuperviseCoordinator).
  struct PendingDeploy {
    deploy::DeployCommand command;
    rpc::ClientServer::Responder respond;
    uint64_t request_id;
    uint64_t deadline_ms;
  };
  deploy::DeployState deploy_;
  bool rc_running_ = false;
  std::deque<PendingDeploy> deploy_queue_;           // client commands, in arrival order
  std::optional<consensus::Slot> deploy_inflight_;   // the one deployment decree not yet applied
  uint64_t next_health_ms_ = 0;
  std::set<std::string> sched_health_done_;  // schedulers decided in this health loop
  // Proposes `c` as the in-flight deployment decree; `client` (may be null)
  // is answered when it is applied. False if the replica refused it.
  bool ProposeDeploy(const deploy::DeployCommand& c, PendingDeploy* client);

  uint64_t epoch_ = 0;
  uint64_t next_seq_ = 0;
  std::map<consensus::Slot, PendingWrite> pending_writes_;
  std::deque<PendingRead> pending_reads_;
  uint64_t next_expiry_ms_ = 0;

  struct PeerView {
    std::string client_addr;
    std::string software_version;
    uint64_t last_heard_ms = 0;
    bool heard = false;
  };
  std::map<consensus::NodeId, PeerView> peers_;
  consensus::Role last_role_ = consensus::Role::kFollower;
  consensus::NodeId last_leader_ = consensus::kNoNode;
};

}  // namespace ts::node

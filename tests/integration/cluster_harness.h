// ProcessCluster: real tsnode processes on loopback for integration tests.
// Picks free ports, gives each node a temporary data dir and a log file,
// and can kill (SIGKILL), stop (SIGTERM), restart, pause (SIGSTOP) and
// resume (SIGCONT) them. Waits are conditions with deadlines, never bare
// sleeps. The destructor kills every process it started and removes the
// data (kept when TS_KEEP_LOGS is set); on a failed test the tail of every
// node's log is printed.
//
// Nodes are started with PR_SET_PDEATHSIG: they die with the thread that
// started them, so call Start/Restart from the test's main thread.
//
// TS_TSNODE_ARGS adds flags to every node (e.g. "--log-level debug").
//
// Timings: heartbeat 20 ms, lease 100 ms. TS_TEST_TIMING_SCALE (e.g. 3 under
// sanitizers) multiplies them and every deadline.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "node/client/client.h"
#include "rpc/client_protocol.h"
#include "rpc/transport.h"

namespace ts::integration {

double TimingScale();
std::chrono::milliseconds Scaled(std::chrono::milliseconds ms);

// Polls `pred` every few milliseconds until it holds or `timeout` (scaled) passes.
bool WaitFor(const std::function<bool()>& pred, std::chrono::milliseconds timeout);

class ProcessCluster {
 public:
  // Starts `n` nodes with the common flags plus `extra_args`. per_node_args[i]
  // (if given) is added to node i's flags for good, e.g. its software
  // version. With start_now false no node is started yet (see Start).
  explicit ProcessCluster(size_t n, std::vector<std::string> extra_args = {},
                          std::vector<std::vector<std::string>> per_node_args = {}, bool start_now = true);
  ~ProcessCluster();
  ProcessCluster(const ProcessCluster&) = delete;
  ProcessCluster& operator=(const ProcessCluster&) = delete;

  size_t size() const { return nodes_.size(); }
  // Adds node index size() (id size() + 1) on fresh ports, not started and
  // not in the other nodes' --peers: a machine to add with `member add`.
  // Its own --peers lists every node; it starts on an empty data dir with
  // --initial-cluster-state existing. Returns its index.
  size_t AddSpare();
  const std::string& data_dir(size_t i) const { return nodes_[i].data_dir; }
  void Start(size_t i, std::vector<std::string> extra_args = {});
  // The tsnode binary node i runs from its next start on (the default: this
  // build's). An upgrade test swaps a stopped node's binary for another
  // release's on the same data dir.
  void SetBinary(size_t i, std::string path) { nodes_[i].binary = std::move(path); }
  // Start node i without --initial-cluster-state, which releases before
  // 1.1.0 do not know (they bootstrap an empty data dir by themselves).
  void OmitInitialClusterState(size_t i) { nodes_[i].started_once = true; }
  void Kill(size_t i);    // SIGKILL and reap
  void Stop(size_t i);    // SIGTERM, wait (SIGKILL after 10 s)
  // Removes node i's data directory (the node must not run): it restarts
  // with an empty data dir, as a learner that catches up from its peers and
  // votes again once the leader has bound its new incarnation.
  void WipeData(size_t i);
  void Restart(size_t i, std::vector<std::string> extra_args = {});
  // Restarts node i announcing `version` from now on (its flags change).
  void RestartAs(size_t i, const std::string& version);
  void Pause(size_t i);   // SIGSTOP
  void Resume(size_t i);  // SIGCONT
  bool Alive(size_t i) const;
  pid_t pid(size_t i) const { return nodes_[i].pid; }
  // The temporary directory holding every node's data dir and log, and node
  // i's log file (for tools that print where to look, e.g. tsnemesis).
  const std::string& dir() const { return dir_; }
  const std::string& log_path(size_t i) const { return nodes_[i].log_path; }

  const rpc::HostPort& client_addr(size_t i) const { return nodes_[i].client; }
  const rpc::HostPort& peer_addr(size_t i) const { return nodes_[i].peer; }
  std::vector<rpc::HostPort> endpoints() const;

  // One node's status (never redirected); nullopt if it does not answer.
  std::optional<rpc::NodeStatus> StatusOf(size_t i) const;
  // The index of the one running node that leads with a lease, if no
  // answering node names another leader (nodes that know none yet do not
  // count against it). nullopt otherwise: callers must check, or wait with
  // WaitForLeaderIndex, since leadership can change between two calls.
  std::optional<size_t> LeaderIndex() const;
  bool WaitForLeader(std::chrono::milliseconds timeout) const;
  // A leader, and every running node a voter. A bootstrap member that starts
  // after the others chose the genesis joins as a learner (its empty data
  // dir could be a lost disk) and votes once the leader saw it catch up: a
  // test that restarts nodes as another version waits for this first.
  bool WaitForFormed(std::chrono::milliseconds timeout) const;
  // Polls LeaderIndex until it has a value or `timeout` (scaled) passes.
  std::optional<size_t> WaitForLeaderIndex(std::chrono::milliseconds timeout) const;
  // Waits until every live node has applied the same slot with the same digest.
  bool WaitForConvergence(std::chrono::milliseconds timeout) const;

  // Node i's peak virtual memory (VmPeak, bytes) from /proc; nullopt if it
  // is not running. Growth across hostile input shows an allocation sized by
  // a length field that was not checked first, even one never touched.
  std::optional<uint64_t> PeakVirtualBytes(size_t i) const;

  client::ClientOptions ClientOptionsFor(std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) const;
  // The harness's own clients (StatusOf, ClientOptionsFor) use this TLS
  // setup from now on: for a cluster started with --tls-* flags.
  void UseClientTls(std::shared_ptr<rpc::TlsContext> tls) { client_tls_ = std::move(tls); }
  std::string LogTail(size_t i, size_t lines = 30) const;
  // Node i's whole log so far; LogsOfAll: every node's, one after another.
  std::string LogText(size_t i) const;
  std::string LogsOfAll() const;
  void DumpLogs() const;

 private:
  struct NodeProc {
    consensus::NodeId id = 0;
    rpc::HostPort peer;
    rpc::HostPort client;
    std::string data_dir;
    std::string log_path;
    std::vector<std::string> args;
    pid_t pid = -1;
    bool paused = false;
    bool started_once = false;  // its first start bootstraps the cluster (--initial-cluster-state new)
    std::string binary;         // empty: this build's tsnode
  };
  std::shared_ptr<rpc::TlsContext> client_tls_;
  std::string dir_;
  std::vector<NodeProc> nodes_;
  std::vector<std::string> extra_args_;
};

// Base fixture of the multi-process tests: owns the cluster and prints the
// tail of every node's log when the test failed.
class ClusterFixture : public ::testing::Test {
 protected:
  void TearDown() override {
    if (HasFailure() && cluster_) cluster_->DumpLogs();
  }
  std::unique_ptr<ProcessCluster> cluster_;
};

// Picks `n` free loopback ports below the kernel's ephemeral range, never one
// this process handed out before (cluster_harness.cc says why).
std::vector<uint16_t> FreePorts(size_t n);

// A cluster of `n` nodes, each started with an HTTP port (--http-addr) on a
// free loopback port; `http_ports` gets them, node i's at i.
std::unique_ptr<ProcessCluster> StartWithHttpPorts(size_t n, std::vector<uint16_t>* http_ports);

// Asks node i alone (a direct connection: fault requests are never
// redirected) to drop traffic with `peers`, comma-separated ids ("" heals).
// The nodes need --fault-injection.
void BlockPeers(const ProcessCluster& c, size_t i, const std::string& peers);

// A client request of `op` with a key and a value.
inline rpc::ClientRequest Req(rpc::ClientOp op, std::string key, std::string value = "") {
  rpc::ClientRequest r;
  r.op = op;
  r.key = std::move(key);
  r.value = std::move(value);
  return r;
}

}  // namespace ts::integration

// Driver: one tsnode process around a Station (node/station/station.h). It
// owns what the station may not: the io_context, the RocksDB LogStore, the
// peer transport and client port, the clock, the random seed, the logger
// and the signals. It decides nothing; it carries out the station's driver
// contract on one thread:
//
//   loop: wait for I/O, the next tick or a written batch -> run every ready
//         handler (each Step/LinkUp/Request accumulates into the station)
//         -> Tick -> while the station has output: send early messages,
//         reply, hand the batch to the storage thread (storage_writer.h).
//   written batch (back from the storage thread, in order): send, Persisted,
//         log.
//
// The loop never waits for the disk: while a batch syncs it keeps reading,
// sending and answering, and what accumulates meanwhile goes to disk with
// one sync (group commit), not one each.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <optional>
#include <string>

#include <asio.hpp>

#include "node/station/station.h"
#include "node/tsnode/digest_watch.h"
#include "node/tsnode/disposer.h"
#include "node/tsnode/file_snapshots.h"
#include "node/tsnode/snapshot_file_thread.h"
#include "node/tsnode/http_port.h"
#include "node/tsnode/storage_writer.h"
#include "node/tsnode/systemd_notify.h"
#include "rpc/transport.h"
#include "storage/log_store.h"

namespace ts::tsnode {

struct DriverOptions {
  station::StationOptions station;                     // id, timings and limits
  std::map<consensus::NodeId, rpc::HostPort> members;  // peer address of every member, self included
  rpc::HostPort client_addr;            // the client port listens here
  rpc::HostPort advertise_client_addr;  // ... and clients are told to dial this (leader hints)
  std::optional<rpc::HostPort> peer_listen_addr;  // default: members[self], which peers dial
  std::string data_dir;
  size_t frame_bytes_max = rpc::kDefaultFrameBytesMax;
  // The highest wire version this node speaks to peers and clients
  // (rpc/frame.h); lower only to play an older release's range in tests.
  uint8_t wire_version_max = rpc::kWireVersion;
  rpc::ClientLimits client_limits;  // connection cap and idle timeout of the client port
  std::optional<rpc::HostPort> http_addr;  // the HTTP port (http_port.h); none if unset; port 0: the kernel's pick
  HttpLimits http_limits;                  // its timeouts, caps and request slots (http_gate.h)
  // Mutual TLS on the peer, client and HTTP ports (rpc/stream.h); empty:
  // plaintext. The certificate must name this node: CN=node-<id>,
  // O=<cluster id>, OU=node.
  rpc::TlsFiles tls;
  // --initial-cluster-state new: an empty data dir is a bootstrap member of
  // a cluster not yet created (incarnation 0). Otherwise an empty data dir
  // joins an existing cluster as a learner (a fresh random incarnation).
  bool initial_cluster_new = false;
  // How often the state digests at checkpoint slots are compared with each
  // peer's (digest_watch.h); 0: never.
  std::chrono::milliseconds digest_watch_period{5000};
  // A turn of the event loop longer than this is logged (loop_watch.h);
  // 0: half the lease, past which a leader's lease is at risk.
  std::chrono::milliseconds loop_warn{0};
};

class Driver {
 public:
  explicit Driver(DriverOptions options);
  ~Driver();

  // Opens storage (checking the data dir's identity), opens the station
  // (which replays the chosen log) and binds both ports. A non-OK status
  // says exactly what is wrong; nothing has been started then.
  Status Start();

  // Runs the loop until SIGINT/SIGTERM or Stop(). A storage failure aborts
  // the process after logging it (never retry an fsync).
  void Run();
  void Stop();

 private:
  class StoreLog;

  uint64_t NowMs() const;
  // Loads options_.tls (if any) and checks that the certificate is this
  // node's.
  Status LoadTls();
  Status StartTransport();
  Status StartClientPort();
  Status StartHttpPort();
  void StartDigestWatch();
  // A client request served by the event loop for another thread (the
  // HTTP port's); nullopt if the loop gave no answer within the request
  // timeout and a second.
  std::optional<rpc::ClientResponse> CallFromAnotherThread(rpc::ClientRequest req);
  Status LoadIdentity(const consensus::Bootstrap& boot);
  // Hands the station's output over (the driver contract's steps a to c,
  // and d to f for a batch written inline) until it has none, or until
  // `until`: then the rest waits for the next turn of the loop.
  void Flush(std::optional<std::chrono::steady_clock::time_point> until = std::nullopt);
  // Runs on the storage thread: queues written batches for the loop.
  void HandBack(std::vector<Written>&& group);
  // On the loop: completes the batches handed back, in order.
  void CompleteWritten();
  void Complete(Written w);
  void Reply(station::Ready& r);
  void FillStatus(rpc::NodeStatus& st);
  void CarryOut(const station::Ready& r);
  void LogEvents(const station::Ready& r);
  // Counts elections and leader changes from the core's status.
  void ObserveRole();
  void WarnOfBounds(const consensus::ReplicaStatus& s);
  // Starts a snapshot when the station wants one, and takes the next step
  // of the one being taken (see driver.cc).
  void MaybeSnapshot();
  void StepSnapshot();
  void MaybeLoadSnapshot();
  void FinishLoad();
  void FinishSnapshot(bool ok, const std::string& why);
  void OnClientRequest(rpc::ClientRequest&& req, rpc::ClientServer::Responder respond);
  [[noreturn]] void StorageFailed(const Status& s);

  DriverOptions options_;
  asio::io_context io_;
  std::unique_ptr<storage::LogStore> store_;
  std::unique_ptr<StoreLog> log_;
  std::mutex written_mu_;
  std::deque<Written> written_;  // handed back by writer_, to complete on the loop
  // Destroyed before the store (its thread writes there) and the queue above.
  std::unique_ptr<StorageWriter> writer_;
  size_t writes_in_flight_ = 0;  // submitted to writer_ and not completed yet
  uint64_t group_entries_ = 0;   // entries written since the last sync
  SyncTimes sync_times_;         // whether a small batch may be written on the loop
  std::unique_ptr<FileSnapshots> snapshots_;
  // The snapshot being taken: its file (null: none), slot, and steps.
  static constexpr size_t kSnapshotStepBytes = 256 << 10;
  std::unique_ptr<SnapshotFileThread> snapshot_file_;
  consensus::Slot snapshot_slot_ = 0;
  bool snapshot_records_done_ = false;
  std::chrono::steady_clock::time_point snapshot_started_;
  uint64_t snapshot_steps_ = 0;
  int64_t snapshot_step_us_ = 0, snapshot_step_max_us_ = 0;
  // A peer's snapshot being read off the loop (null: none), and the
  // thread that reads it.
  std::unique_ptr<station::SnapshotLoad> load_;
  std::chrono::steady_clock::time_point load_started_;
  std::thread load_thread_;
  // Destroys the state an installed snapshot replaced, and a snapshot
  // writer given up, off the loop. Drained before the loop's io_context
  // goes (a writer's thread may still post to it).
  Disposer disposer_;
  std::unique_ptr<station::Station> station_;
  std::shared_ptr<rpc::TlsContext> tls_;  // null: plaintext
  std::unique_ptr<rpc::PeerTransport> transport_;
  std::unique_ptr<rpc::ClientServer> clients_;
  std::unique_ptr<HttpPort> http_;  // after the loop's members: stopped first
  std::unique_ptr<DigestWatch> digest_watch_;
  rpc::NodeCounters counters_;
  consensus::Role last_role_ = consensus::Role::kFollower;
  consensus::NodeId last_leader_ = consensus::kNoNode;
  consensus::Ballot last_leader_ballot_;
  // A count of times a bound held something back, as last logged, and
  // when: a warning when it rises, at once, then at most every 5 s.
  struct BoundWarning {
    uint64_t logged = 0;
    std::optional<uint64_t> logged_ms;
    bool Due(uint64_t count, uint64_t now_ms);
  };
  BoundWarning disk_behind_;     // consensus::Config::unwritten_bytes_max
  BoundWarning peers_held_back_; // consensus::Config::peer_unacked_bytes_max
  asio::signal_set signals_;
  SystemdNotifier systemd_;
  std::chrono::steady_clock::time_point start_;
  bool stopping_ = false;
  uint64_t next_handle_ = 1;
  std::map<consensus::NodeId, rpc::HostPort> peer_addrs_;  // the configuration's, as the station last said
  std::map<uint64_t, rpc::ClientServer::Responder> responders_;
};

}  // namespace ts::tsnode

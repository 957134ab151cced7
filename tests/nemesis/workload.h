// The nemesis's client workload: K threads, each with its own
// ts::client::Client, issuing put/get/cas/delete on a small set of register
// keys (every value unique), plus a share of write-once puts to fresh keys
// for the lost-write check. Every operation is recorded (history.h) with
// call and return times and what came back.
//
// Register keys rotate: every `rotate_ms` the workload moves on to a new
// generation of `keys` keys ("r3.g7"), as Jepsen's independent keys do, so
// that each key's history stays small enough for the checker whatever the
// run's length, while every moment still sees `keys` contended keys.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "node/client/client.h"
#include "tests/nemesis/history.h"

namespace ts::nemesis {

// Collects operations from every client thread, appending each to the
// history file as it completes.
class Recorder {
 public:
  // `path` is created (truncated); ok() says whether it could be.
  Recorder(const std::string& path, std::chrono::steady_clock::time_point epoch);
  bool ok() const { return out_.good(); }
  uint64_t NowNs() const;
  void Add(HistoryOp op);
  void WriteMeta(const std::string& json_object);  // one {"meta":...} line
  void Flush();
  // A copy of everything recorded so far.
  std::vector<HistoryOp> Snapshot() const;
  // Calls f(ops) under the lock, without copying (the history can be a
  // million operations long). f must not call back into the recorder.
  template <class F>
  auto View(F&& f) const {
    std::lock_guard<std::mutex> lock(mu_);
    return f(static_cast<const std::vector<HistoryOp>&>(ops_));
  }
  size_t size() const;

 private:
  std::chrono::steady_clock::time_point epoch_;
  mutable std::mutex mu_;
  std::vector<HistoryOp> ops_;
  std::ofstream out_;
};

struct WorkloadOptions {
  uint64_t seed = 1;
  size_t clients = 4;
  size_t keys = 8;
  uint64_t rotate_ms = 10'000;  // 0: the same keys for the whole run
  uint32_t fresh_percent = 15;  // share of operations that are write-once puts
  client::ClientOptions client;   // endpoints and timeouts
};

// Live counters for the progress lines.
struct WorkloadCounters {
  std::atomic<uint64_t> ops{0}, ok{0}, negative{0}, unknown{0}, not_applied{0}, errors{0};
};

// The register key of slot `slot` in generation `gen`.
std::string RegisterKey(size_t slot, uint64_t gen);

// Runs client `id` until `stop` is set; records into `rec`. Call on its own
// thread. `start` is when generation 0 began.
void RunClient(size_t id, const WorkloadOptions& o, const std::atomic<bool>& stop, Recorder& rec,
               WorkloadCounters& counters, std::chrono::steady_clock::time_point start);

// Issues one operation through `client`, timing and classifying the answer
// (RecordAnswer). Also used for the final reads. `unexpected_answer`, if
// given, is set for an answer this workload never provokes.
HistoryOp Execute(client::Client& client, Recorder& rec, uint64_t client_id, rpc::ClientRequest req,
                  bool* unexpected_answer = nullptr);

}  // namespace ts::nemesis

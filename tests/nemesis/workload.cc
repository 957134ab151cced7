// The nemesis's workload; see workload.h.
#include "tests/nemesis/workload.h"

#include <cassert>
#include <map>
#include <optional>
#include <random>

namespace ts::nemesis {

using Kind = sim::KvOperation::Kind;
using rpc::ClientOp;

Recorder::Recorder(const std::string& path, std::chrono::steady_clock::time_point epoch)
    : epoch_(epoch), out_(path, std::ios::trunc) {}

uint64_t Recorder::NowNs() const {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - epoch_).count());
}

void Recorder::Add(HistoryOp op) {
  std::string line = EncodeOp(op);
  std::lock_guard<std::mutex> lock(mu_);
  out_ << line << '\n';
  ops_.push_back(std::move(op));
}

void Recorder::WriteMeta(const std::string& json_object) {
  std::lock_guard<std::mutex> lock(mu_);
  out_ << "{\"meta\":" << json_object << "}\n";
}

void Recorder::Flush() {
  std::lock_guard<std::mutex> lock(mu_);
  out_.flush();
}

std::vector<HistoryOp> Recorder::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ops_;
}

size_t Recorder::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ops_.size();
}

std::string RegisterKey(size_t slot, uint64_t gen) { return "r" + std::to_string(slot) + ".g" + std::to_string(gen); }

HistoryOp Execute(client::Client& client, Recorder& rec, uint64_t client_id, rpc::ClientRequest req,
                  bool* unexpected_answer) {
  HistoryOp op;
  op.client = client_id;
  op.kind = req.op == ClientOp::kPut ? Kind::kPut
            : req.op == ClientOp::kCas ? Kind::kCas
            : req.op == ClientOp::kDelete ? Kind::kDelete
                                          : Kind::kGet;
  assert(req.op == ClientOp::kGet || op.kind != Kind::kGet);
  op.key = req.key;
  op.value = req.value;
  op.expected = req.expected;
  op.expected_absent = req.expected_absent;
  op.call_ns = rec.NowNs();
  auto r = client.Call(std::move(req));
  op.return_ns = rec.NowNs();
  const bool expected = RecordAnswer(r, op);
  if (unexpected_answer != nullptr) *unexpected_answer = !expected;
  if (op.outcome == Outcome::kUnknown) op.return_ns = 0;
  return op;
}

void RunClient(size_t id, const WorkloadOptions& o, const std::atomic<bool>& stop, Recorder& rec,
               WorkloadCounters& counters, std::chrono::steady_clock::time_point start) {
  assert(o.keys > 0);
  std::mt19937_64 rng(o.seed * 0x9E3779B97F4A7C15ULL + id + 1);
  client::Client client(o.client);
  std::map<std::string, std::optional<std::string>> last_seen;  // what this client last saw of a key
  uint64_t seq = 0;
  while (!stop.load()) {
    ++seq;
    const uint64_t gen =
        o.rotate_ms == 0 ? 0
                         : static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                     std::chrono::steady_clock::now() - start)
                                                     .count()) /
                               o.rotate_ms;
    const std::string value = "v" + std::to_string(id) + "." + std::to_string(seq);
    rpc::ClientRequest req;
    bool fresh = false;
    if (rng() % 100 < o.fresh_percent) {
      fresh = true;
      req.op = ClientOp::kPut;
      req.key = "f" + std::to_string(id) + "." + std::to_string(seq);
      req.value = value;
    } else {
      req.key = RegisterKey(rng() % o.keys, gen);
      uint64_t dice = rng() % 100;
      if (dice < 35) {
        req.op = ClientOp::kGet;
      } else if (dice < 65) {
        req.op = ClientOp::kPut;
        req.value = value;
      } else if (dice < 90) {
        req.op = ClientOp::kCas;
        req.value = value;
        auto seen = last_seen.find(req.key);
        if (seen == last_seen.end() || !seen->second) req.expected_absent = true;
        else req.expected = *seen->second;
      } else {
        req.op = ClientOp::kDelete;
      }
    }
    bool unexpected = false;
    HistoryOp op = Execute(client, rec, id, std::move(req), &unexpected);
    op.fresh = fresh;
    // What this client now believes the key holds, to aim its next cas.
    if (!fresh) {
      if (op.outcome == Outcome::kOk) {
        last_seen[op.key] = op.kind == Kind::kGet ? op.result : op.kind == Kind::kDelete ? std::optional<std::string>()
                                                                                          : op.value;
      } else if (op.outcome == Outcome::kNegative && op.kind != Kind::kCas) {
        last_seen[op.key] = std::nullopt;
      } else if (op.outcome != Outcome::kNotApplied) {
        last_seen.erase(op.key);
      }
    }
    ++counters.ops;
    switch (op.outcome) {
      case Outcome::kOk: ++counters.ok; break;
      case Outcome::kNegative: ++counters.negative; break;
      case Outcome::kUnknown: ++counters.unknown; break;
      case Outcome::kNotApplied: ++counters.not_applied; break;
    }
    if (unexpected) ++counters.errors;
    rec.Add(std::move(op));
  }
}

}  // namespace ts::nemesis

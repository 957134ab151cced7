// Verdicts on a history; see checker.h.
#include "tests/nemesis/checker.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <mutex>
#include <thread>

#include "tests/sim/linearizability.h"

namespace ts::nemesis {

RegisterVerdict CheckRegisters(const std::vector<HistoryOp>& history, uint64_t max_states_per_key, size_t threads) {
  std::map<std::string, std::vector<sim::KvOperation>> by_key;
  for (const HistoryOp& op : history) {
    if (op.fresh) continue;
    auto k = ToCheckerOp(op);
    if (k) by_key[op.key].push_back(std::move(*k));
  }
  std::vector<const std::pair<const std::string, std::vector<sim::KvOperation>>*> work;
  for (const auto& entry : by_key) work.push_back(&entry);
  // The longest histories first, so that one slow key does not start last.
  std::sort(work.begin(), work.end(), [](auto* a, auto* b) { return a->second.size() > b->second.size(); });

  RegisterVerdict v;
  v.keys = work.size();
  std::mutex mu;
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < work.size();) {
      sim::LinearizabilityResult r = sim::CheckLinearizable(work[i]->second, max_states_per_key);
      std::lock_guard<std::mutex> lock(mu);
      v.states += r.states_explored;
      if (!r.ok) {
        ++v.violations;
        v.explanations.push_back("key " + work[i]->first + " (" + std::to_string(work[i]->second.size()) +
                                 " ops): " + r.explanation);
      }
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 0; t < std::max<size_t>(1, threads); ++t) pool.emplace_back(worker);
  for (std::thread& t : pool) t.join();
  std::sort(v.explanations.begin(), v.explanations.end());
  assert(v.explanations.size() == v.violations);
  return v;
}

uint64_t LongestAnswerGapNs(const std::vector<HistoryOp>& history) {
  std::vector<uint64_t> returns;
  for (const HistoryOp& op : history) {
    if (!op.final_read && (op.outcome == Outcome::kOk || op.outcome == Outcome::kNegative)) {
      returns.push_back(op.return_ns);
    }
  }
  std::sort(returns.begin(), returns.end());
  uint64_t longest = 0;
  for (size_t i = 1; i < returns.size(); ++i) longest = std::max(longest, returns[i] - returns[i - 1]);
  return longest;
}

std::vector<std::string> FreshKeys(const std::vector<HistoryOp>& history) {
  std::vector<std::string> keys;
  for (const HistoryOp& op : history) {
    if (op.fresh && !op.final_read) keys.push_back(op.key);
  }
  return keys;
}

FreshVerdict CheckFreshWrites(const std::vector<HistoryOp>& history,
                              const std::map<std::string, std::optional<std::string>>& final_values) {
  FreshVerdict v;
  for (const HistoryOp& op : history) {
    if (!op.fresh || op.final_read) continue;
    assert(op.kind == sim::KvOperation::Kind::kPut);
    auto it = final_values.find(op.key);
    if (it == final_values.end()) {
      ++v.unread;
      continue;
    }
    const std::optional<std::string>& got = it->second;
    const std::string shown = got ? "'" + *got + "'" : "nothing";
    if (op.outcome == Outcome::kOk) {
      ++v.acknowledged;
      if (!got || *got != op.value) {
        ++v.lost;
        v.explanations.push_back("lost write: put(" + op.key + ", " + op.value + ") was acknowledged at " +
                                 std::to_string(op.return_ns) + " ns; the final read found " + shown);
      }
    } else if (got && (op.outcome == Outcome::kNotApplied || *got != op.value)) {
      ++v.violations;
      v.explanations.push_back("write-once key " + op.key + " holds " + shown + " after a put(" + op.value +
                               ") answered " + OutcomeName(op.outcome) +
                               (op.error.empty() ? "" : " (" + op.error + ")"));
    }
  }
  return v;
}

}  // namespace ts::nemesis

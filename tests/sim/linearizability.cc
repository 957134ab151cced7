// CheckLinearizable; see linearizability.h. The search follows Lowe's
// formulation of Wing & Gong: walk the call/return events in time order;
// at a call, try to linearize that operation now (if the model accepts its
// answer and the (set, state) pair is new), lift it out and start over; at a
// return whose operation is not yet linearized, undo the last choice.
#include "tests/sim/linearizability.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <unordered_set>

namespace ts::sim {
namespace {

using State = std::optional<std::string>;

// Applies `op` to `s`; false if its (known) answer is impossible from `s`.
bool Step(const KvOperation& op, const State& s, State* next) {
  bool known = op.return_ns.has_value();
  *next = s;
  switch (op.kind) {
    case KvOperation::Kind::kPut:
      if (known && !op.ok) return false;
      *next = op.value;
      return true;
    case KvOperation::Kind::kGet:
      if (!known) return true;
      return op.ok ? (s.has_value() && *s == op.result) : !s.has_value();
    case KvOperation::Kind::kCas: {
      bool matches = op.expected_absent ? !s.has_value() : (s.has_value() && *s == op.expected);
      if (known && op.ok != matches) return false;
      if (matches) *next = op.value;
      return true;
    }
    case KvOperation::Kind::kDelete:
      if (known && op.ok != s.has_value()) return false;
      *next = std::nullopt;
      return true;
  }
  return false;
}

struct Event {
  int op;
  bool is_call;
  int match;  // index of the partner event
  int prev = -1, next = -1;
};

struct MemoKey {
  std::vector<uint64_t> bits;
  State state;
  bool operator==(const MemoKey&) const = default;
};

struct MemoHash {
  size_t operator()(const MemoKey& k) const {
    size_t h = k.state ? std::hash<std::string>()(*k.state) : 0x9e3779b9;
    for (uint64_t w : k.bits) h = h * 1000003u ^ std::hash<uint64_t>()(w);
    return h;
  }
};

std::string Describe(const KvOperation& op) {
  static const char* kNames[] = {"put", "get", "cas", "delete"};
  std::string s = std::string(kNames[static_cast<int>(op.kind)]) + "(" + op.key;
  if (op.kind == KvOperation::Kind::kPut || op.kind == KvOperation::Kind::kCas) s += ", " + op.value;
  s += ")";
  if (!op.return_ns) return s + " -> unknown";
  if (op.kind == KvOperation::Kind::kGet) return s + (op.ok ? " -> " + op.result : " -> not found");
  return s + (op.ok ? " -> ok" : " -> failed");
}

// The history as a doubly linked list of call and return events, sorted by
// time (at equal times calls first: the permissive reading of a clock that
// could not tell them apart); ev[0] is the head sentinel and each event's
// match is its partner.
std::vector<Event> BuildEvents(const std::vector<const KvOperation*>& ops) {
  const uint64_t kNever = std::numeric_limits<uint64_t>::max();
  std::vector<std::pair<std::pair<uint64_t, int>, std::pair<int, bool>>> order;
  for (size_t i = 0; i < ops.size(); ++i) {
    order.push_back({{ops[i]->call_ns, 0}, {static_cast<int>(i), true}});
    order.push_back({{ops[i]->return_ns.value_or(kNever), 1}, {static_cast<int>(i), false}});
  }
  std::sort(order.begin(), order.end());
  std::vector<Event> ev(order.size() + 1);
  std::vector<int> call_of(ops.size()), ret_of(ops.size());
  for (size_t k = 0; k < order.size(); ++k) {
    int idx = static_cast<int>(k) + 1;
    ev[idx].op = order[k].second.first;
    ev[idx].is_call = order[k].second.second;
    (ev[idx].is_call ? call_of : ret_of)[ev[idx].op] = idx;
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    ev[call_of[i]].match = ret_of[i];
    ev[ret_of[i]].match = call_of[i];
  }
  for (size_t k = 0; k < ev.size(); ++k) {
    ev[k].prev = static_cast<int>(k) - 1;
    ev[k].next = k + 1 < ev.size() ? static_cast<int>(k) + 1 : -1;
  }
  return ev;
}

// Taking an operation out of the list (linearized) and putting it back
// (backtracking), call and return together.
void Lift(std::vector<Event>& ev, int call) {
  for (int i : {call, ev[call].match}) {
    ev[ev[i].prev].next = ev[i].next;
    if (ev[i].next != -1) ev[ev[i].next].prev = ev[i].prev;
  }
}

void Unlift(std::vector<Event>& ev, int call) {
  for (int i : {ev[call].match, call}) {
    ev[ev[i].prev].next = i;
    if (ev[i].next != -1) ev[ev[i].next].prev = i;
  }
}

// Wing and Gong's search with Lowe's memo of (linearized set, state).
LinearizabilityResult CheckKey(const std::vector<const KvOperation*>& ops, uint64_t max_states) {
  LinearizabilityResult r;
  std::vector<Event> ev = BuildEvents(ops);
  std::vector<uint64_t> bits((ops.size() + 63) / 64, 0);
  State state;
  std::unordered_set<MemoKey, MemoHash> memo;
  std::vector<std::pair<int, State>> stack;
  size_t deepest = 0;
  int entry = ev[0].next;
  while (ev[0].next != -1) {
    if (++r.states_explored > max_states) {
      r.ok = false;
      r.explanation = "search cut after " + std::to_string(max_states) + " steps: undecided, not a pass";
      return r;
    }
    const Event& e = ev[entry];
    if (e.is_call) {
      State next;
      if (Step(*ops[e.op], state, &next)) {
        bits[e.op / 64] |= uint64_t{1} << (e.op % 64);
        if (memo.insert(MemoKey{bits, next}).second) {
          stack.push_back({entry, state});
          state = std::move(next);
          Lift(ev, entry);
          deepest = std::max(deepest, stack.size());
          entry = ev[0].next;
          continue;
        }
        bits[e.op / 64] &= ~(uint64_t{1} << (e.op % 64));
      }
      entry = e.next;
    } else {
      if (stack.empty()) {
        r.ok = false;
        r.explanation = "no order explains " + Describe(*ops[e.op]) + " (at most " + std::to_string(deepest) +
                        " of " + std::to_string(ops.size()) + " operations could be placed)";
        return r;
      }
      auto [call, prev_state] = stack.back();
      stack.pop_back();
      state = std::move(prev_state);
      int op = ev[call].op;
      bits[op / 64] &= ~(uint64_t{1} << (op % 64));
      Unlift(ev, call);
      entry = ev[call].next;
    }
  }
  return r;
}

}  // namespace

LinearizabilityResult CheckLinearizable(const std::vector<KvOperation>& history, uint64_t max_states) {
  std::map<std::string, std::vector<const KvOperation*>> by_key;
  for (const KvOperation& op : history) by_key[op.key].push_back(&op);
  LinearizabilityResult total;
  for (const auto& [key, ops] : by_key) {
    LinearizabilityResult r = CheckKey(ops, max_states);
    total.states_explored += r.states_explored;
    if (!r.ok) {
      r.key = key;
      r.states_explored = total.states_explored;
      return r;
    }
  }
  return total;
}

}  // namespace ts::sim

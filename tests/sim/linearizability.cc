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
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace ts::sim {
namespace {

using Register = std::optional<std::string>;

// Applies `op` (not a transaction) to register `s`; false if its (known)
// answer is impossible from `s`.
bool StepRegister(const KvOperation& op, const Register& s, Register* next) {
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
    case KvOperation::Kind::kTxn:
      return false;
  }
  return false;
}

size_t HashRegister(const Register& r) { return r ? std::hash<std::string>()(*r) : 0x9e3779b9; }

// One key's register: the state of a part that is one key and no
// transaction.
struct RegisterModel {
  using State = Register;
  explicit RegisterModel(const std::vector<const KvOperation*>&) {}
  State Initial() const { return std::nullopt; }
  bool Step(const KvOperation& op, const State& s, State* next) const { return StepRegister(op, s, next); }
  static size_t Hash(const State& s) { return HashRegister(s); }
};

bool CheckHolds(const TxnCheck& c, const Register& cell) {
  if (c.target == TxnCheck::Target::kExists) {
    bool want = c.op == TxnCheck::Op::kEqual ? c.exists : !c.exists;
    return cell.has_value() == want;
  }
  if (!cell) return false;  // a missing key satisfies no value compare
  switch (c.op) {
    case TxnCheck::Op::kEqual: return *cell == c.value;
    case TxnCheck::Op::kNotEqual: return *cell != c.value;
    case TxnCheck::Op::kLess: return *cell < c.value;
    case TxnCheck::Op::kGreater: return *cell > c.value;
  }
  return false;
}

// Many keys, each a register: the state of a part with transactions.
struct MultiKeyModel {
  using State = std::vector<Register>;
  explicit MultiKeyModel(const std::vector<const KvOperation*>& ops) {
    for (const KvOperation* op : ops)
      for (const std::string& k : op->Keys()) index.emplace(k, 0);
    int i = 0;
    for (auto& [k, idx] : index) idx = i++;
  }
  State Initial() const { return State(index.size()); }
  int At(const std::string& key) const { return index.at(key); }

  bool Step(const KvOperation& op, const State& s, State* next) const {
    if (op.kind != KvOperation::Kind::kTxn) {
      *next = s;
      int i = At(op.key);
      return StepRegister(op, s[i], &(*next)[i]);
    }
    bool known = op.return_ns.has_value();
    bool holds = true;
    for (const TxnCheck& c : op.compares) {
      if (!CheckHolds(c, s[At(c.key)])) {
        holds = false;
        break;
      }
    }
    if (known && holds != op.txn_succeeded) return false;
    const std::vector<TxnStep>& steps = holds ? op.then_ops : op.else_ops;
    if (known && op.txn_results.size() != steps.size()) return false;
    *next = s;
    for (size_t i = 0; i < steps.size(); ++i) {
      Register& cell = (*next)[At(steps[i].key)];
      switch (steps[i].kind) {
        case TxnStep::Kind::kPut:
          cell = steps[i].value;
          break;
        case TxnStep::Kind::kDelete:
          if (known && op.txn_results[i].found != cell.has_value()) return false;
          cell = std::nullopt;
          break;
        case TxnStep::Kind::kGet:
          if (known && (op.txn_results[i].found != cell.has_value() ||
                        (cell.has_value() && *cell != op.txn_results[i].value))) {
            return false;
          }
          break;
      }
    }
    return true;
  }
  static size_t Hash(const State& s) {
    size_t h = s.size();
    for (const Register& r : s) h = h * 31u ^ HashRegister(r);
    return h;
  }

  std::map<std::string, int> index;  // key -> its place in the state
};

struct Event {
  int op;
  bool is_call;
  int match;  // index of the partner event
  int prev = -1, next = -1;
};

template <class State>
struct MemoKey {
  std::vector<uint64_t> bits;
  State state;
  bool operator==(const MemoKey&) const = default;
};

template <class Model>
struct MemoHash {
  size_t operator()(const MemoKey<typename Model::State>& k) const {
    size_t h = Model::Hash(k.state);
    for (uint64_t w : k.bits) h = h * 1000003u ^ std::hash<uint64_t>()(w);
    return h;
  }
};

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
template <class Model>
LinearizabilityResult Search(const std::vector<const KvOperation*>& ops, uint64_t max_states) {
  using State = typename Model::State;
  const Model model(ops);
  LinearizabilityResult r;
  std::vector<Event> ev = BuildEvents(ops);
  std::vector<uint64_t> bits((ops.size() + 63) / 64, 0);
  State state = model.Initial();
  std::unordered_set<MemoKey<State>, MemoHash<Model>> memo;
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
      if (model.Step(*ops[e.op], state, &next)) {
        bits[e.op / 64] |= uint64_t{1} << (e.op % 64);
        if (memo.insert(MemoKey<State>{bits, next}).second) {
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

std::vector<std::string> KvOperation::Keys() const {
  if (kind != Kind::kTxn) return {key};
  std::vector<std::string> out;
  for (const TxnCheck& c : compares) out.push_back(c.key);
  for (const auto* steps : {&then_ops, &else_ops})
    for (const TxnStep& s : *steps) out.push_back(s.key);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string Describe(const KvOperation& op) {
  static const char* kNames[] = {"put", "get", "cas", "delete", "txn"};
  std::string s = std::string(kNames[static_cast<int>(op.kind)]) + "(";
  if (op.kind != KvOperation::Kind::kTxn) {
    s += op.key;
    if (op.kind == KvOperation::Kind::kPut || op.kind == KvOperation::Kind::kCas) s += ", " + op.value;
    s += ")";
    if (!op.return_ns) return s + " -> unknown";
    if (op.kind == KvOperation::Kind::kGet) return s + (op.ok ? " -> " + op.result : " -> not found");
    return s + (op.ok ? " -> ok" : " -> failed");
  }
  static const char* kOps[] = {"=", "!=", "<", ">"};
  std::string sep = "if ";
  for (const TxnCheck& c : op.compares) {
    s += sep + (c.target == TxnCheck::Target::kExists
                    ? std::string(c.exists == (c.op == TxnCheck::Op::kEqual) ? "exists(" : "absent(") + c.key + ")"
                    : "value(" + c.key + ") " + kOps[static_cast<int>(c.op)] + " " + c.value);
    sep = " and ";
  }
  auto steps = [](const std::vector<TxnStep>& v) {
    std::string out;
    for (const TxnStep& t : v) {
      static const char* kSteps[] = {"put", "delete", "get"};
      out += std::string(out.empty() ? "" : ", ") + kSteps[static_cast<int>(t.kind)] + " " + t.key +
             (t.kind == TxnStep::Kind::kPut ? " " + t.value : "");
    }
    return out;
  };
  s += " then [" + steps(op.then_ops) + "] else [" + steps(op.else_ops) + "])";
  if (!op.return_ns) return s + " -> unknown";
  s += op.txn_succeeded ? " -> then [" : " -> else [";
  for (size_t i = 0; i < op.txn_results.size(); ++i) {
    s += (i ? ", " : "") + (op.txn_results[i].found ? op.txn_results[i].value.empty() ? std::string("found")
                                                                                       : op.txn_results[i].value
                                                    : std::string("absent"));
  }
  return s + "]";
}

std::vector<std::vector<size_t>> IndependentParts(const std::vector<KvOperation>& history) {
  // Union-find over keys; each operation joins the keys it touches.
  std::unordered_map<std::string, int> id;
  std::vector<int> parent;
  auto find = [&](int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  auto key_id = [&](const std::string& k) {
    auto [it, fresh] = id.emplace(k, static_cast<int>(parent.size()));
    if (fresh) parent.push_back(it->second);
    return it->second;
  };
  std::vector<int> first_key(history.size());
  for (size_t i = 0; i < history.size(); ++i) {
    const KvOperation& op = history[i];
    if (op.kind != KvOperation::Kind::kTxn) {
      first_key[i] = key_id(op.key);
      continue;
    }
    std::vector<std::string> keys = op.Keys();
    first_key[i] = keys.empty() ? -1 : key_id(keys[0]);
    for (size_t k = 1; k < keys.size(); ++k) {
      int a = find(first_key[i]), b = find(key_id(keys[k]));
      if (a != b) parent[b] = a;
    }
  }
  std::vector<std::vector<size_t>> parts;
  std::unordered_map<int, size_t> part_of;  // root key -> part
  for (size_t i = 0; i < history.size(); ++i) {
    if (first_key[i] < 0) continue;  // a transaction of no key touches nothing
    auto [it, fresh] = part_of.emplace(find(first_key[i]), parts.size());
    if (fresh) parts.emplace_back();
    parts[it->second].push_back(i);
  }
  return parts;
}

LinearizabilityResult CheckPart(const std::vector<const KvOperation*>& ops, uint64_t max_states) {
  bool one_register = true;
  for (const KvOperation* op : ops) {
    if (op->kind == KvOperation::Kind::kTxn || op->key != ops.front()->key) {
      one_register = false;
      break;
    }
  }
  LinearizabilityResult r =
      one_register ? Search<RegisterModel>(ops, max_states) : Search<MultiKeyModel>(ops, max_states);
  if (!r.ok) {
    std::set<std::string> keys;
    for (const KvOperation* op : ops)
      for (const std::string& k : op->Keys()) keys.insert(k);
    for (const std::string& k : keys) r.key += (r.key.empty() ? "" : " ") + k;
  }
  return r;
}

LinearizabilityResult CheckLinearizable(const std::vector<KvOperation>& history, uint64_t max_states) {
  LinearizabilityResult total;
  for (const std::vector<size_t>& part : IndependentParts(history)) {
    std::vector<const KvOperation*> ops;
    ops.reserve(part.size());
    for (size_t i : part) ops.push_back(&history[i]);
    LinearizabilityResult r = CheckPart(ops, max_states);
    total.states_explored += r.states_explored;
    if (!r.ok) {
      r.states_explored = total.states_explored;
      return r;
    }
  }
  return total;
}

}  // namespace ts::sim

// The linearizability checker on histories it must accept and histories it
// must reject (stale reads, lost writes, double cas, flip-flopping reads,
// transactions no order explains, torn transactions).
#include "tests/sim/linearizability.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <random>

namespace ts::sim {
namespace {

using Kind = KvOperation::Kind;

KvOperation Put(std::string k, std::string v, uint64_t call, std::optional<uint64_t> ret) {
  KvOperation o;
  o.kind = Kind::kPut;
  o.key = std::move(k);
  o.value = std::move(v);
  o.ok = true;
  o.call_ns = call;
  o.return_ns = ret;
  return o;
}

KvOperation Get(std::string k, std::optional<std::string> seen, uint64_t call, uint64_t ret) {
  KvOperation o;
  o.kind = Kind::kGet;
  o.key = std::move(k);
  o.ok = seen.has_value();
  o.result = seen.value_or("");
  o.call_ns = call;
  o.return_ns = ret;
  return o;
}

KvOperation CasAbsent(std::string k, std::string v, bool ok, uint64_t call, uint64_t ret) {
  KvOperation o;
  o.kind = Kind::kCas;
  o.key = std::move(k);
  o.value = std::move(v);
  o.expected_absent = true;
  o.ok = ok;
  o.call_ns = call;
  o.return_ns = ret;
  return o;
}

// A transaction, built up by the helpers below.
struct TxnBuilder {
  KvOperation o;
  TxnBuilder() { o.kind = Kind::kTxn; }
  TxnBuilder& IfValue(std::string k, std::string v, TxnCheck::Op op = TxnCheck::Op::kEqual) {
    TxnCheck c;
    c.key = std::move(k);
    c.value = std::move(v);
    c.op = op;
    o.compares.push_back(c);
    return *this;
  }
  TxnBuilder& IfExists(std::string k, bool exists) {
    TxnCheck c;
    c.target = TxnCheck::Target::kExists;
    c.key = std::move(k);
    c.exists = exists;
    o.compares.push_back(c);
    return *this;
  }
  static TxnStep Step(TxnStep::Kind kind, std::string k, std::string v = "") {
    TxnStep t;
    t.kind = kind;
    t.key = std::move(k);
    t.value = std::move(v);
    return t;
  }
  TxnBuilder& Then(TxnStep::Kind kind, std::string k, std::string v = "") {
    o.then_ops.push_back(Step(kind, std::move(k), std::move(v)));
    return *this;
  }
  TxnBuilder& Else(TxnStep::Kind kind, std::string k, std::string v = "") {
    o.else_ops.push_back(Step(kind, std::move(k), std::move(v)));
    return *this;
  }
  // The answer: the branch that ran and its results (nullopt: absent).
  KvOperation Answer(uint64_t call, uint64_t ret, bool then_ran,
                     const std::vector<std::optional<std::string>>& results) const {
    KvOperation a = o;
    a.call_ns = call;
    a.return_ns = ret;
    a.ok = true;
    a.txn_succeeded = then_ran;
    for (const auto& r : results) a.txn_results.push_back(TxnStepResult{r.has_value(), r.value_or("")});
    return a;
  }
  KvOperation Unknown(uint64_t call) const {
    KvOperation a = o;
    a.call_ns = call;
    a.return_ns = std::nullopt;
    return a;
  }
};

using S = TxnStep::Kind;

TEST(Linearizability, CheckLinearizable_AcceptsSequentialAndConcurrentHistories) {
  EXPECT_TRUE(CheckLinearizable({Put("a", "1", 0, 10), Get("a", "1", 20, 30), Put("a", "2", 40, 50),
                                 Get("a", "2", 60, 70)}).ok);
  // A read concurrent with a write may see either value.
  EXPECT_TRUE(CheckLinearizable({Put("a", "1", 0, 10), Put("a", "2", 20, 50), Get("a", "1", 25, 30)}).ok);
  EXPECT_TRUE(CheckLinearizable({Put("a", "1", 0, 10), Put("a", "2", 20, 50), Get("a", "2", 25, 30)}).ok);
  EXPECT_TRUE(CheckLinearizable({Get("a", std::nullopt, 0, 5)}).ok);
}

TEST(Linearizability, CheckLinearizable_RejectsAStaleRead) {
  auto r = CheckLinearizable({Put("a", "1", 0, 10), Put("a", "2", 20, 30), Get("a", "1", 40, 50)});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.key, "a");
  EXPECT_NE(r.explanation.find("no order explains"), std::string::npos) << r.explanation;
}

TEST(Linearizability, CheckLinearizable_RejectsALostAcknowledgedWrite) {
  EXPECT_FALSE(CheckLinearizable({Put("a", "1", 0, 10), Get("a", std::nullopt, 20, 30)}).ok);
}

TEST(Linearizability, CheckLinearizable_UnknownOutcomeMayOrMayNotHaveHappened) {
  EXPECT_TRUE(CheckLinearizable({Put("a", "1", 0, std::nullopt), Get("a", "1", 20, 30)}).ok);
  EXPECT_TRUE(CheckLinearizable({Put("a", "1", 0, std::nullopt), Get("a", std::nullopt, 20, 30)}).ok);
  // But not both: once seen, it stays.
  EXPECT_FALSE(CheckLinearizable({Put("a", "1", 0, std::nullopt), Get("a", "1", 20, 30),
                                  Get("a", std::nullopt, 40, 50)}).ok);
}

TEST(Linearizability, CheckLinearizable_RejectsTwoWinnersOfOneCas) {
  EXPECT_TRUE(CheckLinearizable({CasAbsent("l", "x", true, 0, 20), CasAbsent("l", "y", false, 5, 25)}).ok);
  EXPECT_FALSE(CheckLinearizable({CasAbsent("l", "x", true, 0, 20), CasAbsent("l", "y", true, 5, 25)}).ok);
}

TEST(Linearizability, CheckLinearizable_SplitsPerKey) {
  // Key a is fine; key b has a stale read: the verdict names b.
  auto r = CheckLinearizable({Put("a", "1", 0, 10), Get("a", "1", 20, 30), Put("b", "1", 0, 10),
                              Put("b", "2", 20, 30), Get("b", "1", 40, 50)});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.key, "b");
}

TEST(Linearizability, CheckLinearizable_TransactionMovesAValueAtomically) {
  // Move a's value to b: then branch puts b and deletes a, answering the delete.
  auto move = TxnBuilder().IfValue("a", "1").Then(S::kPut, "b", "1").Then(S::kDelete, "a").Else(S::kGet, "a");
  EXPECT_TRUE(CheckLinearizable({Put("a", "1", 0, 10), move.Answer(20, 30, true, {std::nullopt, "1"}),
                                 Get("a", std::nullopt, 40, 50), Get("b", "1", 40, 50)}).ok);
  // The else branch ran though a held 1 all along: no order explains it.
  auto r = CheckLinearizable({Put("a", "1", 0, 10), move.Answer(20, 30, false, {"1"})});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.key, "a b");
  EXPECT_NE(r.explanation.find("no order explains"), std::string::npos) << r.explanation;
  EXPECT_EQ(Describe(move.Answer(20, 30, false, {"1"})),
            "txn(if value(a) = 1 then [put b 1, delete a] else [get a]) -> else [1]");
  // The then branch with the delete answered "absent": impossible, a was 1.
  EXPECT_FALSE(CheckLinearizable({Put("a", "1", 0, 10), move.Answer(20, 30, true, {std::nullopt, std::nullopt})}).ok);
}

TEST(Linearizability, CheckLinearizable_RejectsATornTransaction) {
  // One transaction writes a and b; a get between its effects sees one but
  // not the other, after the transaction returned.
  auto both = TxnBuilder().IfExists("a", false).Then(S::kPut, "a", "x").Then(S::kPut, "b", "x");
  auto torn = CheckLinearizable({both.Answer(0, 10, true, {std::nullopt, std::nullopt}), Get("a", "x", 20, 30),
                                 Get("b", std::nullopt, 20, 30)});
  EXPECT_FALSE(torn.ok);
  // Concurrent with the transaction a get may see neither or both, never
  // one alone: a then b, each read while the transaction is in flight, must
  // agree with one instant. Seeing a (so after) and then b missing later is torn.
  EXPECT_TRUE(CheckLinearizable({both.Answer(0, 100, true, {std::nullopt, std::nullopt}), Get("a", std::nullopt, 10, 20),
                                 Get("b", "x", 30, 40)}).ok);
  EXPECT_FALSE(CheckLinearizable({both.Answer(0, 100, true, {std::nullopt, std::nullopt}), Get("a", "x", 10, 20),
                                  Get("b", std::nullopt, 30, 40)}).ok);
  // A transaction that read both keys in one instant while a single-key
  // writer changed them one by one: it saw the new a with the old b, which
  // is fine only if the two writes were concurrent with it in that order.
  auto read_both = TxnBuilder().Then(S::kGet, "a").Then(S::kGet, "b");
  EXPECT_TRUE(CheckLinearizable({Put("a", "2", 0, 50), Put("b", "2", 60, 100),
                                 read_both.Answer(10, 90, true, {"2", std::nullopt})}).ok);
  EXPECT_FALSE(CheckLinearizable({Put("a", "2", 0, 50), Put("b", "2", 60, 100),
                                  read_both.Answer(10, 90, true, {std::nullopt, "2"})}).ok);
}

TEST(Linearizability, CheckLinearizable_TransactionCompares) {
  auto swap_if_less = TxnBuilder().IfValue("a", "5", TxnCheck::Op::kLess).Then(S::kPut, "a", "9").Else(S::kGet, "a");
  EXPECT_TRUE(CheckLinearizable({Put("a", "3", 0, 10), swap_if_less.Answer(20, 30, true, {std::nullopt}),
                                 Get("a", "9", 40, 50)}).ok);
  EXPECT_TRUE(CheckLinearizable({Put("a", "7", 0, 10), swap_if_less.Answer(20, 30, false, {"7"})}).ok);
  EXPECT_FALSE(CheckLinearizable({Put("a", "7", 0, 10), swap_if_less.Answer(20, 30, true, {std::nullopt})}).ok);
  // A missing key satisfies no value compare, != included.
  auto if_not_x = TxnBuilder().IfValue("a", "x", TxnCheck::Op::kNotEqual).Then(S::kPut, "b", "1");
  EXPECT_TRUE(CheckLinearizable({if_not_x.Answer(0, 10, false, {})}).ok);
  EXPECT_FALSE(CheckLinearizable({if_not_x.Answer(0, 10, true, {std::nullopt})}).ok);
  // Existence with != flips it.
  auto if_absent = TxnBuilder().IfExists("a", true);
  if_absent.o.compares[0].op = TxnCheck::Op::kNotEqual;
  if_absent.Then(S::kPut, "a", "1");
  EXPECT_TRUE(CheckLinearizable({if_absent.Answer(0, 10, true, {std::nullopt}), Get("a", "1", 20, 30)}).ok);
  EXPECT_FALSE(CheckLinearizable({Put("a", "0", 0, 5), if_absent.Answer(10, 20, true, {std::nullopt})}).ok);
}

TEST(Linearizability, CheckLinearizable_UnknownTransactionMayOrMayNotHaveRun) {
  auto both = TxnBuilder().Then(S::kPut, "a", "1").Then(S::kPut, "b", "1");
  EXPECT_TRUE(CheckLinearizable({both.Unknown(0), Get("a", "1", 20, 30), Get("b", "1", 40, 50)}).ok);
  EXPECT_TRUE(CheckLinearizable({both.Unknown(0), Get("a", std::nullopt, 20, 30), Get("b", std::nullopt, 40, 50)}).ok);
  // But never half of it.
  EXPECT_FALSE(CheckLinearizable({both.Unknown(0), Get("a", "1", 20, 30), Get("b", std::nullopt, 40, 50)}).ok);
}

TEST(Linearizability, IndependentParts_TransactionsJoinTheirKeys) {
  auto ab = TxnBuilder().IfExists("a", true).Then(S::kPut, "b", "1");
  auto cd = TxnBuilder().Then(S::kGet, "c").Else(S::kDelete, "d");
  std::vector<KvOperation> h = {Put("a", "1", 0, 1), Put("e", "1", 0, 1), ab.Answer(2, 3, true, {std::nullopt}),
                                Put("b", "2", 4, 5), cd.Answer(6, 7, true, {std::nullopt}), Get("d", std::nullopt, 8, 9)};
  std::vector<std::vector<size_t>> parts = IndependentParts(h);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0], (std::vector<size_t>{0, 2, 3}));
  EXPECT_EQ(parts[1], (std::vector<size_t>{1}));
  EXPECT_EQ(parts[2], (std::vector<size_t>{4, 5}));
}

TEST(Linearizability, CheckLinearizable_LargeConcurrentHistoryFromARegisterIsAccepted) {
  // A true register, concurrent clients: 8 clients x 200 operations on 4 keys,
  // generated by applying each operation at a random instant inside its
  // interval. Must be accepted, and quickly (memoisation).
  std::mt19937_64 rng(7);
  std::vector<KvOperation> h;
  std::map<std::string, std::optional<std::string>> reg;
  struct Pending {
    KvOperation op;
    uint64_t at;
  };
  std::vector<Pending> all;
  for (int c = 0; c < 8; ++c) {
    uint64_t t = rng() % 10;
    for (int i = 0; i < 200; ++i) {
      KvOperation o;
      o.key = "k" + std::to_string(rng() % 4);
      o.kind = (rng() % 2) ? Kind::kPut : Kind::kGet;
      o.value = std::to_string(c) + "-" + std::to_string(i);
      o.call_ns = t;
      uint64_t len = 1 + rng() % 50;
      o.return_ns = t + len;
      all.push_back({o, t + rng() % len});
      t += len + rng() % 20;
    }
  }
  std::sort(all.begin(), all.end(), [](const Pending& a, const Pending& b) { return a.at < b.at; });
  for (Pending& p : all) {
    auto& cell = reg[p.op.key];
    if (p.op.kind == Kind::kPut) {
      cell = p.op.value;
      p.op.ok = true;
    } else {
      p.op.ok = cell.has_value();
      p.op.result = cell.value_or("");
    }
    h.push_back(p.op);
  }
  auto r = CheckLinearizable(h);
  EXPECT_TRUE(r.ok) << r.explanation;
  // Corrupt one read: it must now be rejected.
  for (KvOperation& o : h) {
    if (o.kind == Kind::kGet && o.ok) {
      o.result = "never-written";
      break;
    }
  }
  EXPECT_FALSE(CheckLinearizable(h).ok);
}

// Applies `o` to `store` at its instant, filling in its answer: the
// history of a true multi-key store.
void ApplyToStore(std::map<std::string, std::optional<std::string>>& store, KvOperation& o) {
  if (o.kind != Kind::kTxn) {
    auto& cell = store[o.key];
    if (o.kind == Kind::kPut) {
      cell = o.value;
      o.ok = true;
    } else {
      o.ok = cell.has_value();
      o.result = cell.value_or("");
    }
    return;
  }
  bool holds = true;
  for (const TxnCheck& c : o.compares) {
    const auto& cell = store[c.key];
    holds = holds && (c.target == TxnCheck::Target::kExists ? cell.has_value() == c.exists
                                                            : cell.has_value() && *cell == c.value);
  }
  o.ok = true;
  o.txn_succeeded = holds;
  for (const TxnStep& t : holds ? o.then_ops : o.else_ops) {
    auto& cell = store[t.key];
    o.txn_results.push_back(TxnStepResult{t.kind != S::kPut && cell.has_value(),
                                          t.kind == S::kGet ? cell.value_or("") : ""});
    if (t.kind == S::kPut) cell = t.value;
    if (t.kind == S::kDelete) cell = std::nullopt;
  }
}

TEST(Linearizability, CheckLinearizable_ConcurrentTransactionsFromATrueStoreAreAccepted) {
  // 4 clients x 60 operations over 3 keys, transactions among them (which
  // join every key into one part), a few with unknown outcomes: accepted,
  // and a corrupted transaction answer rejected.
  std::mt19937_64 rng(11);
  struct Pending {
    KvOperation op;
    uint64_t at;
  };
  std::vector<Pending> all;
  for (int c = 0; c < 4; ++c) {
    uint64_t t = rng() % 10;
    for (int i = 0; i < 60; ++i) {
      std::string v = std::to_string(c) + "-" + std::to_string(i);
      KvOperation o;
      std::string k1 = "k" + std::to_string(rng() % 3), k2 = "k" + std::to_string(rng() % 3);
      switch (rng() % 3) {
        case 0:
          o = TxnBuilder().IfValue(k1, std::to_string(rng() % 4) + "-" + std::to_string(rng() % 60))
                  .Then(S::kPut, k1, v).Then(S::kPut, k2, v).Else(S::kGet, k1).Else(S::kDelete, k2).o;
          break;
        case 1:
          o = TxnBuilder().IfExists(k1, rng() % 2).Then(S::kGet, k2).Then(S::kPut, k1, v).Else(S::kPut, k2, v).o;
          break;
        default:
          o.kind = (rng() % 2) ? Kind::kPut : Kind::kGet;
          o.key = k1;
          o.value = v;
      }
      o.call_ns = t;
      uint64_t len = 1 + rng() % 50;
      o.return_ns = t + len;
      all.push_back({o, t + rng() % len});
      t += len + rng() % 20;
    }
  }
  std::sort(all.begin(), all.end(), [](const Pending& a, const Pending& b) { return a.at < b.at; });
  std::map<std::string, std::optional<std::string>> store;
  std::vector<KvOperation> h;
  for (Pending& p : all) {
    ApplyToStore(store, p.op);
    if (p.op.kind != Kind::kGet && rng() % 20 == 0) {
      p.op.return_ns = std::nullopt;  // its answer was lost
      p.op.txn_results.clear();
    }
    h.push_back(p.op);
  }
  auto start = std::chrono::steady_clock::now();
  auto r = CheckLinearizable(h);
  EXPECT_TRUE(r.ok) << r.explanation;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  for (KvOperation& o : h) {
    if (o.kind == Kind::kTxn && o.return_ns && o.txn_succeeded && o.then_ops[0].kind == S::kGet &&
        o.txn_results[0].found) {
      o.txn_results[0].value = "never-written";
      break;
    }
  }
  EXPECT_FALSE(CheckLinearizable(h).ok);
}

}  // namespace
}  // namespace ts::sim

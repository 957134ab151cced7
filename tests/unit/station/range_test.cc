// Range reads (node/station/kv_range.h, client_range.cc): the store's pages
// and tokens on their own, then the station's contract with a client on the
// simulated cluster: linearizable pages on the leader only, serializable
// ones anywhere, and paging under writes that misses and repeats nothing.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "node/station/kv_range.h"
#include "node/station/kv_store.h"
#include "node/station/station.h"
#include "tests/sim/station_calls.h"
#include "tests/sim/station_cluster.h"
#include "tests/unit/station/station_test_decrees.h"

namespace ts::station {
namespace {

using testing_decrees::StableLeader;

using rpc::ClientCode;
using rpc::ClientOp;
using rpc::ClientRequest;
using rpc::ClientResponse;
using sim::StationCluster;

constexpr const char* kUuid = "6f1c0a52-0d7e-4b8e-9a43-2f7f3c1d9b10";

KvStore StoreOf(const std::map<std::string, std::string>& m) {
  KvStore kv;
  kv.Restore(m);
  return kv;
}

ClientRequest RangeReq(std::string prefix, uint32_t limit, std::string after = "", uint8_t flags = 0) {
  ClientRequest r;
  r.op = ClientOp::kRange;
  r.key = std::move(prefix);
  r.limit = limit;
  r.after = std::move(after);
  r.range_flags = flags;
  return r;
}

// Reads one page; fails the test on a refusal.
ClientResponse Page(const KvStore& kv, const ClientRequest& req, RangeBounds b = {}) {
  ClientResponse r;
  Status s = ReadRange(kv, kUuid, req, b, &r);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return r;
}

std::vector<std::string> KeysOf(const ClientResponse& r) {
  std::vector<std::string> keys;
  for (const rpc::RangeEntry& e : r.range) keys.push_back(e.key);
  return keys;
}

// Every key under `prefix`, page by page of `limit`.
std::vector<std::string> AllPages(const KvStore& kv, const std::string& prefix, uint32_t limit, size_t* pages,
                                  RangeBounds b = {}) {
  std::vector<std::string> keys;
  std::string after;
  *pages = 0;
  for (;;) {
    ClientResponse r = Page(kv, RangeReq(prefix, limit, after), b);
    ++*pages;
    for (auto& k : KeysOf(r)) keys.push_back(k);
    if ((r.range_flags & rpc::kRangeMore) == 0) {
      EXPECT_TRUE(r.range_after.empty());
      return keys;
    }
    EXPECT_FALSE(r.range.empty()) << "a page that says more follow holds something";
    after = r.range_after;
    if (*pages > 100000) return keys;
  }
}

TEST(KvRange, APrefixInPages_EveryKeyOnceInOrder_EmptyPrefixIsEverything) {
  KvStore kv = StoreOf({{"a", "0"}, {"b/1", "1"}, {"b/2", "2"}, {"b/3", "3"}, {"b0", "x"}, {"c", "9"}});
  ClientResponse first = Page(kv, RangeReq("b/", 2));
  EXPECT_EQ(KeysOf(first), (std::vector<std::string>{"b/1", "b/2"}));
  EXPECT_EQ(first.range[0].value, "1");
  EXPECT_TRUE(first.range_flags & rpc::kRangeMore);
  ClientResponse second = Page(kv, RangeReq("b/", 2, first.range_after));
  EXPECT_EQ(KeysOf(second), (std::vector<std::string>{"b/3"}));
  EXPECT_FALSE(second.range_flags & rpc::kRangeMore) << "b0 does not start with b/";
  size_t pages = 0;
  EXPECT_EQ(AllPages(kv, "", 1, &pages), (std::vector<std::string>{"a", "b/1", "b/2", "b/3", "b0", "c"}));
  EXPECT_EQ(pages, 6u);
  EXPECT_TRUE(Page(kv, RangeReq("zz", 10)).range.empty());
  EXPECT_FALSE(Page(kv, RangeReq("zz", 10)).range_flags & rpc::kRangeMore);
  // A page that ends exactly at the prefix's last key says no more.
  ClientResponse exact = Page(kv, RangeReq("b/", 3));
  EXPECT_EQ(exact.range.size(), 3u);
  EXPECT_FALSE(exact.range_flags & rpc::kRangeMore);
}

TEST(KvRange, KeysWithZeroAndFfBytes_AndThePrefixFfFf) {
  using namespace std::string_literals;
  KvStore kv = StoreOf({{"p\x00"s, "1"},
                        {"p\x00\x01"s, "2"},
                        {"p\x7f", "3"},
                        {"p\xff", "4"},
                        {"p\xff\xff", "5"},
                        {"o\xff", "before"},
                        {"q", "after"},
                        {"\xff", "a"},
                        {"\xff\xfe", "b"},
                        {"\xff\xff", "c"},
                        {"\xff\xff\x00"s, "d"},
                        {"\xff\xff\xff", "e"}});
  size_t pages = 0;
  EXPECT_EQ(AllPages(kv, "p", 1, &pages),
            (std::vector<std::string>{"p\x00"s, "p\x00\x01"s, "p\x7f", "p\xff", "p\xff\xff"}))
      << "bytes order as unsigned: 0x00 first, 0xff last";
  EXPECT_EQ(AllPages(kv, "\xff\xff", 1, &pages), (std::vector<std::string>{"\xff\xff", "\xff\xff\x00"s, "\xff\xff\xff"}));
  EXPECT_EQ(pages, 3u);
  EXPECT_EQ(AllPages(kv, "p\x00"s, 10, &pages), (std::vector<std::string>{"p\x00"s, "p\x00\x01"s}));
  // A key that is the prefix itself belongs to it.
  EXPECT_EQ(KeysOf(Page(kv, RangeReq("q", 10))), (std::vector<std::string>{"q"}));
}

TEST(KvRange, TokensNameTheClusterAndThePrefix_OthersAreBadRequests) {
  KvStore kv = StoreOf({{"a/1", "1"}, {"a/2", "2"}, {"a/3", "3"}});
  ClientResponse first = Page(kv, RangeReq("a/", 1));
  const std::string token = first.range_after;
  auto t = DecodeRangeToken(token);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->cluster_uuid, kUuid);
  EXPECT_EQ(t->prefix, "a/");
  EXPECT_EQ(t->last_key, "a/1");
  ClientResponse r;
  // Another cluster's token.
  Status other = ReadRange(kv, "another-uuid", RangeReq("a/", 1, token), {}, &r);
  EXPECT_EQ(other.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(other.message().find("another cluster"), std::string::npos) << other.message();
  // Another prefix, shorter and longer (the last key starts with both).
  for (const char* p : {"a", "a/1", ""}) {
    Status s = ReadRange(kv, kUuid, RangeReq(p, 1, token), {}, &r);
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << p;
    EXPECT_NE(s.message().find("continues the prefix 'a/'"), std::string::npos) << s.message();
  }
  EXPECT_TRUE(r.range.empty()) << "a refusal leaves the answer untouched";
  // Malformed: odd length, not hex, uppercase, a flipped bit, truncated, too short, wrong format.
  std::string flipped = token;
  flipped[flipped.size() / 2] = flipped[flipped.size() / 2] == '0' ? '1' : '0';
  std::string wrong_format = EncodeRangeToken(RangeToken{kUuid, "a/", "a/1"});
  wrong_format[1] = '2';
  for (const std::string& bad : {token.substr(1), std::string("zz"), std::string("AB"), flipped,
                                 token.substr(0, token.size() - 2), std::string("00"), wrong_format}) {
    Status s = ReadRange(kv, kUuid, RangeReq("a/", 1, bad), {}, &r);
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("malformed range token"), std::string::npos) << s.message();
    EXPECT_NE(RangeRequestRefusal(RangeReq("a/", 1, bad), kUuid, 4096), "") << "refused before any waiting";
  }
  EXPECT_EQ(RangeRequestRefusal(RangeReq("a/", 1, token), kUuid, 4096), "");
  // Keys of any bytes survive the token.
  const std::string odd("\x00\xff\x00", 3);
  auto back = DecodeRangeToken(EncodeRangeToken(RangeToken{kUuid, odd.substr(0, 1), odd}));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->prefix, odd.substr(0, 1));
  EXPECT_EQ(back->last_key, odd);
}

TEST(KvRange, LimitZeroIsRefused_HugeLimitsAreClampedToTheEntryBound) {
  EXPECT_NE(RangeRequestRefusal(RangeReq("", 0), kUuid, 4096).find("limit must be at least 1"), std::string::npos);
  EXPECT_EQ(RangeRequestRefusal(RangeReq("", 0, "", rpc::kRangeCountOnly), kUuid, 4096), "") << "counting needs none";
  EXPECT_NE(RangeRequestRefusal(RangeReq(std::string(4097, 'k'), 1), kUuid, 4096), "");
  EXPECT_NE(RangeRequestRefusal(RangeReq("", 1, "", 0x80), kUuid, 4096), "") << "unknown flags";
  std::map<std::string, std::string> m;
  for (uint32_t i = 0; i < kRangeEntriesMax + 5; ++i) m["k" + std::to_string(1000000 + i)] = "";
  KvStore kv = StoreOf(m);
  ClientResponse r = Page(kv, RangeReq("k", UINT32_MAX));
  EXPECT_EQ(r.range.size(), kRangeEntriesMax);
  EXPECT_TRUE(r.range_flags & rpc::kRangeMore);
  EXPECT_EQ(Page(kv, RangeReq("k", UINT32_MAX, r.range_after)).range.size(), 5u);
}

TEST(KvRange, PagesAreBoundedByBytes_AValueLargerThanTheBoundGoesAlone) {
  RangeBounds b;
  b.bytes_max = 100;
  KvStore kv = StoreOf({{"a", std::string(49, 'x')},   // 50 bytes with its key
                        {"b", std::string(49, 'y')},   // 100 in all: exactly at the bound
                        {"c", std::string(500, 'z')},  // alone, over the bound
                        {"d", std::string(10, 'w')}});
  ClientResponse p1 = Page(kv, RangeReq("", 100), b);
  EXPECT_EQ(KeysOf(p1), (std::vector<std::string>{"a", "b"})) << "up to the bound, inclusive";
  ClientResponse p2 = Page(kv, RangeReq("", 100, p1.range_after), b);
  ASSERT_EQ(KeysOf(p2), (std::vector<std::string>{"c"}));
  EXPECT_EQ(p2.range[0].value.size(), 500u);
  ClientResponse p3 = Page(kv, RangeReq("", 100, p2.range_after), b);
  EXPECT_EQ(KeysOf(p3), (std::vector<std::string>{"d"}));
  EXPECT_FALSE(p3.range_flags & rpc::kRangeMore);
  // Keys only: values do not count, so everything fits one page.
  ClientResponse keys = Page(kv, RangeReq("", 100, "", rpc::kRangeKeysOnly), b);
  EXPECT_EQ(keys.range.size(), 4u);
  for (const auto& e : keys.range) EXPECT_TRUE(e.value.empty());
}

TEST(KvRange, CountOnlyCountsPastTheTokenWithoutEntries_ABoundedNumberAPage) {
  KvStore kv = StoreOf({{"a", "1"}, {"b/1", "1"}, {"b/2", "2"}, {"b/3", "3"}, {"c", "1"}});
  ClientResponse all = Page(kv, RangeReq("b/", 0, "", rpc::kRangeCountOnly));
  EXPECT_EQ(all.total, 3u);
  EXPECT_TRUE(all.range.empty());
  EXPECT_FALSE(all.range_flags & rpc::kRangeMore);
  ClientResponse first = Page(kv, RangeReq("b/", 1));
  EXPECT_EQ(Page(kv, RangeReq("b/", 0, first.range_after, rpc::kRangeCountOnly)).total, 2u);
  EXPECT_EQ(Page(kv, RangeReq("", 0, "", rpc::kRangeCountOnly)).total, 5u);
  // A count is bounded too: past count_max keys it says more follow, and the
  // pages' counts add up to the whole.
  RangeBounds b;
  b.count_max = 2;
  uint64_t sum = 0;
  size_t pages = 0;
  std::string after;
  for (;; ++pages) {
    ClientResponse c = Page(kv, RangeReq("", 0, after, rpc::kRangeCountOnly), b);
    EXPECT_LE(c.total, 2u);
    EXPECT_TRUE(c.range.empty());
    sum += c.total;
    if ((c.range_flags & rpc::kRangeMore) == 0) break;
    after = c.range_after;
    ASSERT_LT(pages, 10u);
  }
  EXPECT_EQ(sum, 5u);
  EXPECT_EQ(pages, 2u) << "pages of 2, 2 and 1";
}

// ---- the station, on the simulated cluster

consensus::NodeId AFollower(StationCluster& c, consensus::NodeId leader) {
  for (consensus::NodeId id : c.members()) {
    if (id != leader) return id;
  }
  return leader;
}

void Put(StationCluster& c, consensus::NodeId l, const std::string& k, const std::string& v) {
  auto a = sim::CallNode(c, l, sim::Req(ClientOp::kPut, k, v));
  ASSERT_TRUE(a.has_value());
  ASSERT_EQ(a->code, ClientCode::kOk) << a->message;
}

TEST(StationRange, LinearizableOnTheLeader_RedirectedByFollowers_SerializableAnywhere) {
  StationCluster c(3, 41);
  consensus::NodeId l = StableLeader(c);
  for (int i = 0; i < 5; ++i) Put(c, l, "svc/" + std::to_string(i), "v" + std::to_string(i));
  auto lin = sim::CallNode(c, l, RangeReq("svc/", 3));
  ASSERT_TRUE(lin.has_value());
  ASSERT_EQ(lin->code, ClientCode::kOk) << lin->message;
  EXPECT_EQ(KeysOf(*lin), (std::vector<std::string>{"svc/0", "svc/1", "svc/2"}));
  EXPECT_EQ(lin->range[1].value, "v1");
  EXPECT_EQ(lin->range[1].mod_slot, c.station(l).kv().Lookup("svc/1")->mod_slot);
  EXPECT_FALSE(lin->range_flags & rpc::kRangeSerializable);
  EXPECT_EQ(lin->slot, c.station(l).applied_slot());
  auto rest = sim::CallNode(c, l, RangeReq("svc/", 3, lin->range_after));
  ASSERT_TRUE(rest.has_value());
  EXPECT_EQ(KeysOf(*rest), (std::vector<std::string>{"svc/3", "svc/4"}));

  const consensus::NodeId f = AFollower(c, l);
  auto redirected = sim::CallNode(c, f, RangeReq("svc/", 3));
  ASSERT_TRUE(redirected.has_value());
  EXPECT_EQ(redirected->code, ClientCode::kNotLeader) << redirected->message;
  EXPECT_FALSE(redirected->leader_hint.empty());
  EXPECT_TRUE(redirected->range.empty());
  // A bad token is refused by any node, before any redirect.
  auto bad = sim::CallNode(c, f, RangeReq("svc/", 3, "0123"));
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->code, ClientCode::kBadRequest);
  auto foreign = sim::CallNode(c, l, RangeReq("svc/", 3, EncodeRangeToken(RangeToken{"x", "svc/", "svc/1"})));
  ASSERT_TRUE(foreign.has_value());
  EXPECT_EQ(foreign->code, ClientCode::kBadRequest);
  EXPECT_NE(foreign->message.find("another cluster"), std::string::npos) << foreign->message;

  ASSERT_TRUE(c.RunUntil([&] { return c.station(f).applied_slot() >= lin->slot; }, 3000));
  auto ser = sim::CallNode(c, f, RangeReq("svc/", 10, "", rpc::kRangeSerializable));
  ASSERT_TRUE(ser.has_value());
  ASSERT_EQ(ser->code, ClientCode::kOk) << ser->message;
  EXPECT_TRUE(ser->range_flags & rpc::kRangeSerializable) << "the answer says so";
  EXPECT_EQ(ser->range.size(), 5u);
  EXPECT_EQ(ser->slot, c.station(f).applied_slot()) << "the applied slot the page reflects";
  // The follower's token continues on the leader: the same cluster, the same prefix.
  auto on_follower = sim::CallNode(c, f, RangeReq("svc/", 2, "", rpc::kRangeSerializable | rpc::kRangeKeysOnly));
  ASSERT_TRUE(on_follower.has_value());
  EXPECT_TRUE(on_follower->range[0].value.empty());
  EXPECT_EQ(on_follower->range_flags & ~rpc::kRangeMore, rpc::kRangeSerializable | rpc::kRangeKeysOnly)
      << "the answer repeats the request's flags";
  auto on_leader = sim::CallNode(c, l, RangeReq("svc/", 10, on_follower->range_after));
  ASSERT_TRUE(on_leader.has_value());
  EXPECT_EQ(KeysOf(*on_leader), (std::vector<std::string>{"svc/2", "svc/3", "svc/4"}));
  auto count = sim::CallNode(c, f, RangeReq("svc/", 0, "", rpc::kRangeSerializable | rpc::kRangeCountOnly));
  ASSERT_TRUE(count.has_value());
  EXPECT_EQ(count->total, 5u);
}

TEST(StationRange, PagingWhileWritesHappen_ReturnsEveryKeyThatLivedThroughoutExactlyOnce) {
  StationCluster c(3, 42);
  consensus::NodeId l = StableLeader(c);
  std::set<std::string> lasting;
  for (int i = 0; i < 120; ++i) {
    std::string k = "r/" + std::to_string(1000 + i * 10);
    Put(c, l, k, "0");
    lasting.insert(k);
  }
  std::vector<std::string> seen;
  std::string after;
  int pages = 0, writes = 0;
  for (;;) {
    // Writes land between and during the pages: new keys before and after
    // the page boundary, deletes of keys written meanwhile, updates of the
    // lasting keys.
    for (int j = 0; j < 3; ++j, ++writes) {
      std::string fresh = "r/" + std::to_string(1000 + (writes * 37) % 1200) + "-new";
      c.Send(l, sim::Req(ClientOp::kPut, fresh, "n"));
      c.Send(l, sim::Req(ClientOp::kPut, *std::next(lasting.begin(), (writes * 13) % lasting.size()), "u"));
      if (writes % 2 == 1) c.Send(l, sim::Req(ClientOp::kDelete, fresh));
      if (j == 1) c.Run(3);  // some are applied before the page, the last still in flight
    }
    auto r = sim::CallNode(c, l, RangeReq("r/", 7, after));
    ASSERT_TRUE(r.has_value());
    ASSERT_EQ(r->code, ClientCode::kOk) << r->message;
    for (auto& k : KeysOf(*r)) seen.push_back(k);
    ++pages;
    if ((r->range_flags & rpc::kRangeMore) == 0) break;
    after = r->range_after;
    ASSERT_LT(pages, 1000);
  }
  EXPECT_GT(pages, 120 / 7);
  for (size_t i = 1; i < seen.size(); ++i) ASSERT_LT(seen[i - 1], seen[i]) << "strictly ascending: none twice";
  std::set<std::string> seen_set(seen.begin(), seen.end());
  for (const std::string& k : lasting) EXPECT_EQ(seen_set.count(k), 1u) << k;
  size_t fresh_seen = 0;
  for (const std::string& k : seen) fresh_seen += k.ends_with("-new");
  EXPECT_GT(fresh_seen, 0u) << "the writes landed while the pages were read";
  EXPECT_GT(c.station(l).kv().size(), lasting.size());
}

}  // namespace
}  // namespace ts::station

// tsctl get --prefix (node/tsctl/tsctl_range.h), run in-process against a
// fake leader whose pages are the station's own (node/station/kv_range.h)
// over a store the test fills: paging through everything, --limit and the
// token that continues it, keys only, counting, refusals and exit codes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "node/station/kv_range.h"
#include "node/tsctl/tsctl_cli.h"
#include "node/tsctl/tsctl_format.h"
#include "node/tsctl/tsctl_range.h"
#include "tests/unit/client/client_fake_node.h"
#include "tests/unit/tsctl/tsctl_runner.h"

namespace ts::tsctl {
namespace {

using client::testing::Code;
using client::testing::FakeNode;
using client::testing::Leading;
using client::testing::Ok;
using rpc::ClientCode;
using rpc::ClientOp;
using testing::Lines;
using testing::Tsctl;

using testing::Has;

constexpr const char* kUuid = "range-test-cluster";

std::string KeyOf(int i) {
  std::string digits = std::to_string(i);
  return "k/" + std::string(4 - digits.size(), '0') + digits;
}

// A leader whose range answers are the station's pages of `kv`; every range
// request is kept in `seen`.
FakeNode::Script RangeLeader(const station::KvStore* kv, std::vector<rpc::ClientRequest>* seen) {
  return Leading([kv, seen](const rpc::ClientRequest& r) -> std::optional<rpc::ClientResponse> {
    if (r.op != ClientOp::kRange) return Code(ClientCode::kBadRequest, "only ranges here");
    seen->push_back(r);
    if (std::string why = station::RangeRequestRefusal(r, kUuid, 4096); !why.empty()) {
      return Code(ClientCode::kBadRequest, why);
    }
    rpc::ClientResponse a = Ok(321);
    a.range_flags = r.range_flags;
    Status s = station::ReadRange(*kv, kUuid, r, {}, &a);
    if (!s.ok()) return Code(ClientCode::kBadRequest, s.message());
    return a;
  });
}

struct Fixture {
  Fixture() {
    std::map<std::string, std::string> m;
    for (int i = 0; i < 2500; ++i) m[KeyOf(i)] = "v" + std::to_string(i);
    m["j"] = "before";
    m["l"] = "after";
    m[std::string("k/\xff\x00", 4)] = std::string("\x01\n", 2);
    kv.Restore(std::move(m));
  }
  station::KvStore kv;
  std::vector<rpc::ClientRequest> seen;
  FakeNode node{RangeLeader(&kv, &seen)};
  std::string ep = node.addr().ToString();
};

TEST(TsctlRange, WithoutALimitItPagesThroughEverything) {
  Fixture f;
  auto r = Tsctl({"--endpoints", f.ep, "get", "--prefix", "k/"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(Lines(r.out), 2 * 2501u) << "a key line and a value line each";
  EXPECT_TRUE(r.out.starts_with("k/0000\nv0\nk/0001\nv1\n")) << r.out.substr(0, 100);
  EXPECT_TRUE(r.out.ends_with("k/\\xff\\x00\n\\x01\\n\n")) << "bytes escaped, one line each";
  EXPECT_TRUE(r.err.empty()) << r.err;
  ASSERT_EQ(f.seen.size(), 3u) << "pages of " << kRangePageEntries;
  EXPECT_EQ(f.seen[0].limit, kRangePageEntries);
  EXPECT_TRUE(f.seen[0].after.empty());
  EXPECT_FALSE(f.seen[1].after.empty()) << "the next page continues the token";
  EXPECT_EQ(f.seen[0].range_flags, 0) << "linearizable, values and all";

  r = Tsctl({"--endpoints", f.ep, "get", "--prefix", "", "--keys-only"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(Lines(r.out), 2503u) << "the empty prefix is every key";
  EXPECT_TRUE(r.out.starts_with("j\nk/0000\n"));
  EXPECT_EQ(f.seen.back().range_flags, rpc::kRangeKeysOnly);
}

TEST(TsctlRange, ALimitStopsThere_AndTheTokenContinues) {
  Fixture f;
  auto r = Tsctl({"--endpoints", f.ep, "--json", "get", "--prefix", "k/", "--limit", "1200", "--keys-only"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["entries"].size(), 1200u);
  EXPECT_EQ(j["count"], 1200);
  EXPECT_EQ(j["more"], true);
  EXPECT_EQ(j["applied_slot"], 321);
  EXPECT_FALSE(j["entries"][0].contains("value")) << "keys only";
  ASSERT_EQ(f.seen.size(), 2u);
  EXPECT_EQ(f.seen[1].limit, 200u) << "the second page asks only for what is left";
  const std::string token = j["after"];
  r = Tsctl({"--endpoints", f.ep, "--json", "get", "--prefix", "k/", "--after", token});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["entries"].size(), 1301u);
  EXPECT_EQ(j["entries"][0]["key"], KeyOf(1200));
  EXPECT_EQ(j["entries"][0]["value"], "v1200");
  EXPECT_EQ(j["more"], false);
  EXPECT_FALSE(j.contains("after"));
  const nlohmann::json& odd = j["entries"].back();
  EXPECT_FALSE(odd.contains("key")) << "not UTF-8: base64 only";
  EXPECT_EQ(*Base64Decode(odd["key_base64"].get<std::string>()), std::string("k/\xff\x00", 4));
  EXPECT_EQ(odd["value"], "\x01\n");
  // Text mode: the continuation goes to stderr, the keys to stdout.
  r = Tsctl({"--endpoints", f.ep, "get", "--prefix", "k/", "--limit", "2", "--keys-only"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "k/0000\nk/0001\n");
  EXPECT_TRUE(Has(r.err, "more keys follow: tsctl get --prefix \"k/\" --after ")) << r.err;
}

TEST(TsctlRange, CountSerializableAndRefusals) {
  Fixture f;
  auto r = Tsctl({"--endpoints", f.ep, "get", "--prefix", "k/", "--count", "--serializable"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "2501\n");
  EXPECT_EQ(f.seen.back().range_flags, rpc::kRangeCountOnly | rpc::kRangeSerializable);
  r = Tsctl({"--endpoints", f.ep, "--json", "get", "--prefix", "nothing/"});
  ASSERT_EQ(r.code, kExitOk) << "no key under the prefix is no error";
  EXPECT_EQ(nlohmann::json::parse(r.out)["entries"].size(), 0u);
  // A token for another prefix, or no token at all: the node's bad request, exit 2.
  auto first = nlohmann::json::parse(Tsctl({"--endpoints", f.ep, "--json", "get", "--prefix", "k/", "--limit", "1"}).out);
  r = Tsctl({"--endpoints", f.ep, "get", "--prefix", "k", "--after", first["after"]});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_TRUE(Has(r.err, "bad request: the range token continues the prefix 'k/'")) << r.err;
  r = Tsctl({"--endpoints", f.ep, "get", "--prefix", "k/", "--after", "not-a-token"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_TRUE(Has(r.err, "malformed range token")) << r.err;
  const size_t sent = f.seen.size();
  for (std::vector<std::string> bad :
       {std::vector<std::string>{"get"}, {"get", "k", "--prefix", "k"}, {"get", "k", "--keys-only"},
        {"get", "--prefix", "k", "--count", "--limit", "3"}, {"get", "--prefix", "k", "--limit", "0"}}) {
    bad.insert(bad.begin(), {"--endpoints", f.ep});
    EXPECT_EQ(Tsctl(bad).code, kExitUsage) << bad[2] << " " << bad.back();
  }
  EXPECT_EQ(f.seen.size(), sent) << "bad arguments send nothing";
}

TEST(TsctlRange, AnOldNodeRefusesByType_Exit6) {
  FakeNode node(Leading([](const rpc::ClientRequest&) -> std::optional<rpc::ClientResponse> {
    rpc::ClientResponse a = Code(ClientCode::kUnsupported, "range needs wire version 3 (1.3.0 or later)");
    a.node_version = "1.2.0";
    return a;
  }));
  auto r = Tsctl({"--endpoints", node.addr().ToString(), "--json", "get", "--prefix", "a"});
  EXPECT_EQ(r.code, kExitUnsupported);
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["unsupported"], true);
  EXPECT_EQ(j["node_version"], "1.2.0");
}

}  // namespace
}  // namespace ts::tsctl

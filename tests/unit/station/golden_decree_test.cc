// Golden decrees: the exact bytes of every decree format ever written live
// in tests/unit/station/golden/ and must decode, with the same meaning, forever
// (docs/design/versions.md#formats: a new version reads the old formats). A test that fails here
// means an encoding changed: add a new model version instead.
//
// TS_WRITE_GOLDEN=1 (re)writes the files of formats that have none yet.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "node/station/decree.h"
#include "node/station/kv_store.h"
#include "node/station/version_state.h"

#ifndef TS_GOLDEN_DIR
#error "TS_GOLDEN_DIR must name tests/unit/node/golden"
#endif

namespace ts::station {
namespace {

std::string ToHex(const std::string& bytes) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

std::string FromHex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

struct Golden {
  std::string name;
  Decree decree;
};

std::vector<Golden> Formats() {
  std::vector<Golden> out;
  auto kv1 = [](DecreeType t, KvCommand c) {
    Decree d;
    d.header.type = static_cast<uint16_t>(t);
    d.header.model_version = 1;
    d.tag = RequestTag{2, 7, 0x1122334455667788ull};
    d.payload = EncodeKvCommand(c);
    return d;
  };
  out.push_back({"kv_put_model1", kv1(DecreeType::kKvPut, {"colour", "blue", "", false})});
  out.push_back({"kv_delete_model1", kv1(DecreeType::kKvDelete, {"colour", "", "", false})});
  out.push_back({"kv_cas_model1", kv1(DecreeType::kKvCas, {"colour", "red", "blue", false})});
  out.push_back({"kv_cas_absent_model1", kv1(DecreeType::kKvCas, {"fresh", "1", "", true})});
  Decree v2;
  v2.header.type = static_cast<uint16_t>(DecreeType::kKvPut);
  v2.header.model_version = 2;
  v2.header.min_reader_version = "1.1.0";
  v2.tag = RequestTag{3, 9, 42};
  KvBatch b;
  b.ops.push_back(KvOp{static_cast<uint16_t>(DecreeType::kKvPut), KvCommand{"a", "1", "", false}});
  b.ops.push_back(KvOp{static_cast<uint16_t>(DecreeType::kKvCas), KvCommand{"b", "2", "", true}});
  v2.payload = EncodeKvBatch(b);
  out.push_back({"kv_batch_model2", v2});
  Decree marker;
  marker.header.type = static_cast<uint16_t>(DecreeType::kVersionMarker);
  marker.tag = RequestTag{1, 1, 5};
  marker.payload = EncodeVersionMarker(VersionMarker{"1.1.0"});
  out.push_back({"version_marker_model1", marker});
  Decree down;
  down.header.type = static_cast<uint16_t>(DecreeType::kDowngrade);
  down.tag = RequestTag{1, 2, 5};
  Downgrade g;
  g.target = "1.0.0";
  g.rewrites.push_back(Rewrite{12, EncodeDecree(kv1(DecreeType::kKvPut, {"a", "1", "", false}))});
  down.payload = EncodeDowngrade(g);
  out.push_back({"downgrade_model1", down});
  return out;
}

TEST(GoldenDecrees, Decode_EveryFormatEverWrittenStillDecodesToTheSameDecree) {
  bool write = std::getenv("TS_WRITE_GOLDEN") != nullptr;
  for (const Golden& g : Formats()) {
    std::string path = std::string(TS_GOLDEN_DIR) + "/" + g.name + ".hex";
    if (write && !std::filesystem::exists(path)) std::ofstream(path) << ToHex(EncodeDecree(g.decree)) << "\n";
    std::ifstream in(path);
    ASSERT_TRUE(in.good()) << "missing golden file " << path;
    std::string hex;
    std::getline(in, hex);
    std::string bytes = FromHex(hex);
    Decree d;
    ASSERT_TRUE(DecodeDecree(bytes, &d).ok()) << g.name;
    EXPECT_EQ(d.header.type, g.decree.header.type) << g.name;
    EXPECT_EQ(d.header.EffectiveModelVersion(), g.decree.header.EffectiveModelVersion()) << g.name;
    EXPECT_EQ(d.header.min_reader_version, g.decree.header.min_reader_version) << g.name;
    EXPECT_EQ(d.tag, g.decree.tag) << g.name;
    EXPECT_EQ(d.payload, g.decree.payload) << g.name;
    EXPECT_EQ(EncodeDecree(d), bytes) << g.name << ": encoding is no longer byte-identical";
  }
}

TEST(GoldenDecrees, Apply_OldFormatsKeepTheirMeaning) {
  auto read = [](const std::string& name) {
    std::ifstream in(std::string(TS_GOLDEN_DIR) + "/" + name + ".hex");
    std::string hex;
    std::getline(in, hex);
    Decree d;
    EXPECT_TRUE(DecodeDecree(FromHex(hex), &d).ok()) << name;
    return d;
  };
  KvStore kv;
  EXPECT_EQ(kv.Apply(read("kv_put_model1"), 0).code, KvResult::Code::kOk);
  EXPECT_EQ(kv.Get("colour"), "blue");
  EXPECT_EQ(kv.Apply(read("kv_cas_model1"), 0).code, KvResult::Code::kOk);
  EXPECT_EQ(kv.Get("colour"), "red");
  EXPECT_EQ(kv.Apply(read("kv_batch_model2"), 0).code, KvResult::Code::kOk);
  EXPECT_EQ(kv.Get("b"), "2");
  EXPECT_EQ(kv.Apply(read("kv_delete_model1"), 0).code, KvResult::Code::kOk);
  EXPECT_FALSE(kv.Get("colour").has_value());
  VersionState a(Semver{1, 0, 0});
  EXPECT_FALSE(a.CanRead(read("kv_batch_model2")));  // model 2 needs 1.1.0
  EXPECT_TRUE(a.CanRead(read("version_marker_model1")));
  a.Observe(read("version_marker_model1"), 1);
  EXPECT_EQ(a.latest_marker(), (Semver{1, 1, 0}));
  a.Observe(read("downgrade_model1"), 1);
  EXPECT_EQ(a.downgrade_to(), (Semver{1, 0, 0}));
}

}  // namespace
}  // namespace ts::station

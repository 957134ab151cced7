// The digests nodes compare and snapshots carry: each hash as documented
// (against a reference computed here and a pinned value, since nodes of
// different builds compare them), and the switch from FNV-1a to XXH3 that
// the log itself decides.
#include "node/station/digest.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstring>
#include <string>

#include "node/station/decree.h"

namespace ts::station {
namespace {

uint64_t ReferenceFnv1a(uint64_t h, std::string_view bytes) {
  for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// The FNV-1a step of digest.h: the slot as 8 bytes little-endian, then the bytes.
uint64_t FnvStep(uint64_t h, uint64_t slot, std::string_view bytes) {
  std::string le(8, '\0');
  for (int i = 0; i < 8; ++i) le[i] = static_cast<char>(slot >> (8 * i));
  return ReferenceFnv1a(ReferenceFnv1a(h, le), bytes);
}

// The XXH3 step of digest.h: XXH3-64 of (h, slot, XXH3-64(bytes)).
uint64_t Xxh3Step(uint64_t h, uint64_t slot, std::string_view bytes) {
  uint64_t record[3] = {h, slot, XXH3_64bits(bytes.data(), bytes.size())};
  return XXH3_64bits(record, sizeof record);
}

std::string Marker(const std::string& version) {
  Decree d;
  d.header.type = static_cast<uint16_t>(DecreeType::kVersionMarker);
  d.payload = EncodeVersionMarker(VersionMarker{version});
  return EncodeDecree(d);
}

std::string DowngradeTo(const std::string& target, bool cancel = false) {
  Decree d;
  d.header.type = static_cast<uint16_t>(DecreeType::kDowngrade);
  Downgrade g;
  g.target = target;
  g.cancel = cancel;
  d.payload = EncodeDowngrade(g);
  return EncodeDecree(d);
}

constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;

TEST(Xxh3, TheLibraryComputesXxh3) {
  // The reference implementation's published values (xxhash's sanity tests).
  EXPECT_EQ(XXH3_64bits(nullptr, 0), 0x2D06800538D394C2ull);
}

TEST(LogDigest, Add_SameLogSameDigestAnyDifferenceChangesIt) {
  for (bool xxh3 : {false, true}) {
    LogDigest a, b, c, d;
    for (LogDigest* x : {&a, &b, &c, &d}) {
      if (xxh3) x->Restore(kFnvOffset, Semver{1, 1, 0}, std::nullopt);
    }
    for (LogDigest* x : {&a, &b}) {
      x->Add(1, "one");
      x->Add(2, "two");
    }
    c.Add(1, "one");
    c.Add(2, "twO");
    d.Add(1, "one");
    d.Add(3, "two");
    EXPECT_EQ(a.Hex(), b.Hex()) << xxh3;
    EXPECT_NE(a.Hex(), c.Hex()) << xxh3;
    EXPECT_NE(a.Hex(), d.Hex()) << xxh3;
    EXPECT_EQ(a.Hex().size(), 16u) << xxh3;
  }
}

TEST(LogDigest, EachHashIsTheDocumentedChainAndStaysPinned) {
  LogDigest fnv;
  fnv.Add(1, "one");
  fnv.Add(2, "two");
  EXPECT_EQ(fnv.hash(), DigestHash::kFnv1a);
  EXPECT_EQ(fnv.value(), FnvStep(FnvStep(kFnvOffset, 1, "one"), 2, "two"));
  // The value software before 1.1.0 computes for this log.
  EXPECT_EQ(fnv.Hex(), "4b4de36d8bbc4af8");

  LogDigest x;
  x.Restore(7, Semver{1, 1, 0}, std::nullopt);
  EXPECT_EQ(x.hash(), DigestHash::kXxh3);
  std::string big(5000, 'v');
  x.Add(1, "one");
  x.Add(2, big);
  EXPECT_EQ(x.value(), Xxh3Step(Xxh3Step(7, 1, "one"), 2, big));
  EXPECT_EQ(x.Hex(), "a767123415752a6f");
}

TEST(LogDigest, TheLogDecidesTheHashFromTheSlotAfterAMarkerOrDowngrade) {
  LogDigest d;
  uint64_t want = kFnvOffset;
  auto add = [&](uint64_t slot, const std::string& bytes, DigestHash expected_hash) {
    ASSERT_EQ(d.hash(), expected_hash) << "slot " << slot;
    want = expected_hash == DigestHash::kXxh3 ? Xxh3Step(want, slot, bytes) : FnvStep(want, slot, bytes);
    d.Add(slot, bytes);
    ASSERT_EQ(d.value(), want) << "slot " << slot;
  };
  add(1, "put", DigestHash::kFnv1a);
  add(2, Marker("1.0.7"), DigestHash::kFnv1a);
  add(3, "put", DigestHash::kFnv1a);        // 1.0.7 computes FNV-1a only
  add(4, Marker("1.1.0"), DigestHash::kFnv1a);  // the marker's own slot: the hash before it
  add(5, "put", DigestHash::kXxh3);
  add(6, DowngradeTo("1.0.0"), DigestHash::kXxh3);
  add(7, "put", DigestHash::kFnv1a);        // what the downgrade's target computes
  add(8, DowngradeTo("", true), DigestHash::kFnv1a);
  add(9, "put", DigestHash::kXxh3);         // cancelled
  add(10, DowngradeTo("1.1.5"), DigestHash::kXxh3);
  add(11, Marker("1.2.0"), DigestHash::kXxh3);  // a downgrade to a reader of XXH3 keeps it
  add(12, "put", DigestHash::kXxh3);
  // Undecodable decrees of those types change nothing.
  std::string torn = Marker("1.0.0").substr(0, 5);
  add(13, torn, DigestHash::kXxh3);
  add(14, "put", DigestHash::kXxh3);
}

TEST(LogDigest, Restore_TakesTheHashFromTheVersionState) {
  LogDigest d;
  d.Restore(42, std::nullopt, std::nullopt);
  EXPECT_EQ(d.hash(), DigestHash::kFnv1a);
  d.Restore(42, Semver{1, 1, 0}, std::nullopt);
  EXPECT_EQ(d.hash(), DigestHash::kXxh3);
  d.Restore(42, Semver{1, 1, 0}, Semver{1, 0, 0});
  EXPECT_EQ(d.hash(), DigestHash::kFnv1a);
  EXPECT_EQ(d.value(), 42u);
}

TEST(SequenceHash, BothHashesSeparateTheStringsAndStayPinned) {
  for (DigestHash h : {DigestHash::kFnv1a, DigestHash::kXxh3}) {
    SequenceHash a(h), b(h), c(h);
    a.Add("ab");
    a.Add("c");
    b.Add("a");
    b.Add("bc");
    c.Add("ab");
    c.Add("c");
    EXPECT_NE(a.Hex(), b.Hex());
    EXPECT_EQ(a.Hex(), c.Hex());
  }
  SequenceHash fnv(DigestHash::kFnv1a);
  fnv.Add("ab");
  fnv.Add("c");
  uint64_t want = ReferenceFnv1a(kFnvOffset, "ab\xff" "c\xff");
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(want));
  EXPECT_EQ(fnv.Hex(), hex);

  SequenceHash x(DigestHash::kXxh3);
  x.Add("ab");
  x.Add("c");
  std::string stream(8, '\0');
  stream[0] = 2;
  stream += "ab";
  stream += std::string(8, '\0');
  stream[10] = 1;
  stream += "c";
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(XXH3_64bits(stream.data(), stream.size())));
  EXPECT_EQ(x.Hex(), hex);
}

}  // namespace
}  // namespace ts::station

// The compatibility corpus: every release's encoded samples (tests/compat/
// <version>/, written by that release's own code, corpus_gen.cc) decoded by
// today's code. Each file must decode, re-encode to the same bytes, and be
// what today's code writes for the same sample in that release's wire
// version: a field removed, reordered, resized or given another type shows
// as different bytes. The last test plants a reordering and shows the
// check catches it.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "rpc/codec.h"
#include "tests/compat/corpus_samples.h"
#include "tests/compat/corpus_samples_130.h"

#ifndef TS_COMPAT_DIR
#error "TS_COMPAT_DIR must name tests/compat"
#endif

namespace ts::compat {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Checks one release's directory; collects a line per problem.
struct Checker {
  explicit Checker(fs::path d) : dir(std::move(d)) {}
  fs::path dir;
  uint8_t wire = 1;
  std::vector<std::string> problems;
  int checked = 0;

  std::optional<std::string> File(const std::string& name) {
    fs::path p = dir / (name + ".bin");
    if (!fs::exists(p)) {
      problems.push_back(name + ": no sample file in " + dir.string());
      return std::nullopt;
    }
    ++checked;
    return ReadFile(p);
  }
  // What today's code makes of the file: it decodes, re-encodes to the same
  // bytes, and today's encoding of the sample is those bytes.
  template <class T, class Enc, class Dec>
  void Check(const std::string& name, const T& sample, Enc encode, Dec decode) {
    auto bytes = File(name);
    if (!bytes) return;
    T back{};
    if (Status s = decode(*bytes, &back); !s.ok()) {
      problems.push_back(name + ": does not decode: " + s.ToString());
      return;
    }
    if (encode(back) != *bytes) problems.push_back(name + ": decodes, but does not re-encode to the same bytes");
    if (encode(sample) != *bytes) {
      problems.push_back(name + ": today's encoding of the sample differs from the release's (a field removed, "
                         "reordered or changed)");
    }
  }
  void Message(const std::string& n, const consensus::Message& m) {
    Check(n, m, [&](const consensus::Message& x) { return rpc::EncodeMessage(x, wire); },
          [&](std::string_view b, consensus::Message* o) { return rpc::DecodeMessage(b, o, wire); });
  }
  // The handshake's struct, byte for byte; and the handshake decoder (which
  // also takes the wire range out of format_versions) must accept it.
  void Handshake(const std::string& n, const rpc::Handshake& h) {
    Check(n, h, [&](const rpc::Handshake& x) { return rpc::EncodeBounded(x, wire); },
          [&](std::string_view b, rpc::Handshake* o) { return rpc::DecodeBounded(b, o, wire); });
    if (auto bytes = File(n)) {
      rpc::Handshake back;
      if (Status s = rpc::DecodeHandshake(*bytes, &back, wire); !s.ok()) {
        problems.push_back(n + ": the handshake decoder refuses it: " + s.ToString());
      }
    }
  }
  void HandshakeAck(const std::string& n, const rpc::HandshakeAck& a) {
    Check(n, a, [&](const rpc::HandshakeAck& x) { return rpc::EncodeHandshakeAck(x, wire); },
          [&](std::string_view b, rpc::HandshakeAck* o) { return rpc::DecodeHandshakeAck(b, o, wire); });
  }
  void Request(const std::string& n, const rpc::ClientRequest& r) {
    Check(n, r, [&](const rpc::ClientRequest& x) { return rpc::EncodeClientRequest(x, wire); },
          [&](std::string_view b, rpc::ClientRequest* o) { return rpc::DecodeClientRequest(b, o, wire); });
  }
  void Response(const std::string& n, const rpc::ClientResponse& r) {
    Check(n, r, [&](const rpc::ClientResponse& x) { return rpc::EncodeClientResponse(x, wire); },
          [&](std::string_view b, rpc::ClientResponse* o) { return rpc::DecodeClientResponse(b, o, wire); });
  }
  // Stored models: always the layout the release before reads.
  template <class T>
  void Stored(const std::string& n, const T& v) {
    Check(n, v, [](const T& x) { return rpc::EncodeBounded(x); },
          [](std::string_view b, T* o) { return rpc::DecodeBounded(b, o); });
  }
  void Stored(const std::string& n, const station::SessionWrite& w) {
    Check(n, w, [](const station::SessionWrite& x) { return station::EncodeSessionWrite(x); },
          [](std::string_view b, station::SessionWrite* o) { return station::DecodeSessionWrite(b, o); });
  }
  void Stored(const std::string& n, const station::SnapshotHeader& h) {
    Check(n, h, [](const station::SnapshotHeader& x) { return station::EncodeSnapshotHeader(x); },
          [](std::string_view b, station::SnapshotHeader* o) {
            auto h = station::DecodeSnapshotHeader(b);
            if (h.ok()) *o = *h;
            return h.status();
          });
  }
};

// Whether a release directory's name (X.Y.Z) is 1.3.0 or later.
bool AtLeast130(const std::string& name) {
  int major = 0, minor = 0, patch = 0;
  if (std::sscanf(name.c_str(), "%d.%d.%d", &major, &minor, &patch) != 3) return false;
  return major > 1 || (major == 1 && minor >= 3);
}

std::vector<fs::path> ReleaseDirs() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(TS_COMPAT_DIR)) {
    if (e.is_directory() && fs::exists(e.path() / "wire_version")) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(Corpus, EveryReleasesSamplesDecodeAsTheyWereWritten) {
  std::vector<fs::path> dirs = ReleaseDirs();
  ASSERT_FALSE(dirs.empty()) << "no release corpus under " << TS_COMPAT_DIR;
  bool has_110 = false, has_130 = false;
  for (const fs::path& dir : dirs) {
    has_110 = has_110 || dir.filename() == "1.1.0";
    Checker c(dir);
    c.wire = static_cast<uint8_t>(std::stoi(ReadFile(dir / "wire_version")));
    ASSERT_GE(c.wire, rpc::kWireVersionMin) << dir << ": a wire version this build no longer reads";
    ASSERT_LE(c.wire, rpc::kWireVersion) << dir << ": a wire version newer than this build";
    ForEachSample(c);
    EXPECT_GE(c.checked, 25) << dir;
    // A release from 1.3.0 on also wrote the samples of what 1.3.0 added.
    if (AtLeast130(dir.filename().string())) {
      has_130 = true;
      int before = c.checked;
      ForEachSampleSince130(c);
      EXPECT_EQ(c.checked - before, 10) << dir << ": the samples of 1.3.0";
    }
    for (const std::string& p : c.problems) ADD_FAILURE() << dir.filename().string() << "/" << p;
  }
  EXPECT_TRUE(has_110) << "the corpus of 1.1.0, the release 1.2.0 rolls from, is missing";
  EXPECT_TRUE(has_130) << "the corpus of 1.3.0, the first with wire version 3, is missing";
}

// A Heartbeat whose second and third fields swapped places.
struct ReorderedHeartbeat {
  consensus::Ballot ballot;
  uint64_t seq = 0;
  consensus::Slot commit_upto = 0;
  std::string software_version;

  template <class A>
  void serialize(A& ar) { ar(ballot, commit_upto, seq, software_version); }
};
using ReorderedBody = std::variant<consensus::Prepare, consensus::Promise, consensus::Accept, consensus::Accepted,
                                   ReorderedHeartbeat>;
struct ReorderedMessage {
  consensus::NodeId from = 0;
  consensus::NodeId to = 0;
  ReorderedBody body;
  uint64_t incarnation = 0;

  template <class A>
  void serialize(A& ar) { ar(from, to, incarnation, body); }
};

// The planted reordering: with Heartbeat's fields in another order, the
// 1.1.0 sample still decodes (two u64s swap), but the check sees it.
TEST(Corpus, APlantedReorderingIsCaught) {
  Checker c(fs::path(TS_COMPAT_DIR) / "1.1.0");
  c.wire = 1;
  ReorderedMessage planted{1, 2, ReorderedHeartbeat{{7, 2}, 99, 11, "1.1.0"}, 15};
  c.Check("msg-heartbeat", planted, [](const ReorderedMessage& x) { return rpc::EncodeBounded(x, 1); },
          [](std::string_view b, ReorderedMessage* o) { return rpc::DecodeBounded(b, o, 1); });
  ASSERT_EQ(c.checked, 1);
  ASSERT_EQ(c.problems.size(), 1u);
  EXPECT_NE(c.problems[0].find("differs from the release's"), std::string::npos) << c.problems[0];
  // The same check with the fields in their order passes.
  Checker ok(fs::path(TS_COMPAT_DIR) / "1.1.0");
  ok.wire = 1;
  ok.Message("msg-heartbeat", consensus::Message{1, 2, consensus::Heartbeat{{7, 2}, 99, 11, "1.1.0"}, 15});
  EXPECT_TRUE(ok.problems.empty()) << ok.problems.front();
}

}  // namespace
}  // namespace ts::compat

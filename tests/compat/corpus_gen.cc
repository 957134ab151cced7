// Writes the compatibility corpus of the release it is compiled against:
// every sample of corpus_samples.h as that release encodes it, one file
// each, and `wire_version` (the wire version its nodes write to their own
// release). Compiled against an older release's sources by
// cluster-scripts/gen-compat-corpus.sh; the files go to
// tests/compat/<version>/ and are decoded by every later build's suite.
#include <cstdio>
#include <fstream>
#include <string>

#include "rpc/codec.h"
#include "rpc/frame.h"
#include "tests/compat/corpus_samples.h"
// Present only in the sources of a release from 1.3.0 on (see the header).
#if __has_include("tests/compat/corpus_samples_130.h")
#include "tests/compat/corpus_samples_130.h"
#define TS_CORPUS_SINCE_130 1
#endif

namespace {

struct Writer {
  std::string dir;
  int files = 0;
  bool ok = true;

  void Put(const std::string& name, const std::string& bytes) {
    std::ofstream f(dir + "/" + name + ".bin", std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    ok = ok && static_cast<bool>(f);
    ++files;
  }
  void Message(const std::string& n, const ts::consensus::Message& m) { Put(n, ts::rpc::EncodeMessage(m)); }
  void Handshake(const std::string& n, const ts::rpc::Handshake& h) { Put(n, ts::rpc::EncodeHandshake(h)); }
  void HandshakeAck(const std::string& n, const ts::rpc::HandshakeAck& a) { Put(n, ts::rpc::EncodeHandshakeAck(a)); }
  void Request(const std::string& n, const ts::rpc::ClientRequest& r) { Put(n, ts::rpc::EncodeClientRequest(r)); }
  void Response(const std::string& n, const ts::rpc::ClientResponse& r) { Put(n, ts::rpc::EncodeClientResponse(r)); }
  // Stored models are written by their own encoders, which every release
  // keeps in the layout its predecessor reads.
  void Stored(const std::string& n, const ts::station::Decree& d) { Put(n, ts::station::EncodeDecree(d)); }
  void Stored(const std::string& n, const ts::station::KvCommand& c) { Put(n, ts::station::EncodeKvCommand(c)); }
  void Stored(const std::string& n, const ts::station::KvBatch& b) { Put(n, ts::station::EncodeKvBatch(b)); }
  void Stored(const std::string& n, const ts::station::VersionMarker& m) { Put(n, ts::station::EncodeVersionMarker(m)); }
  void Stored(const std::string& n, const ts::station::Downgrade& d) { Put(n, ts::station::EncodeDowngrade(d)); }
  void Stored(const std::string& n, const ts::station::MembershipDecree& m) { Put(n, ts::station::EncodeMembership(m)); }
  void Stored(const std::string& n, const ts::station::SnapshotHeader& h) { Put(n, ts::station::EncodeSnapshotHeader(h)); }
#ifdef TS_CORPUS_SINCE_130
  void Stored(const std::string& n, const ts::station::SessionOpen& o) { Put(n, ts::station::EncodeSessionOpen(o)); }
  void Stored(const std::string& n, const ts::station::SessionWrite& w) { Put(n, ts::station::EncodeSessionWrite(w)); }
  void Stored(const std::string& n, const ts::rpc::Txn& t) { Put(n, ts::station::EncodeTxn(t)); }
  void Stored(const std::string& n, const ts::station::LeaseGrant& g) { Put(n, ts::station::EncodeLeaseGrant(g)); }
  void Stored(const std::string& n, const ts::station::IdList& l) { Put(n, ts::station::EncodeIdList(l)); }
#endif
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR (an existing directory)\n", argv[0]);
    return 2;
  }
  Writer w{argv[1]};
  ts::compat::ForEachSample(w);
#ifdef TS_CORPUS_SINCE_130
  ts::compat::ForEachSampleSince130(w);
#endif
  std::ofstream(w.dir + "/wire_version") << static_cast<int>(ts::rpc::kWireVersion) << "\n";
  if (!w.ok) {
    std::fprintf(stderr, "writing the corpus into %s failed\n", argv[1]);
    return 1;
  }
  std::printf("wrote %d samples into %s (wire version %d)\n", w.files, argv[1], static_cast<int>(ts::rpc::kWireVersion));
  return 0;
}

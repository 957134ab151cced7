// tssessioncost: what a put in a session costs one node, in CPU, beyond the
// same put without one: the suspects of bench-local.sh --sessions-ab, each
// timed alone on the station's own code, in ns per write.
//   encode (the leader): the put's decree, or that decree encoded, wrapped
//     in a session-write and encoded again;
//   decode (every node applying it): the decree and its key-value batch, or
//     the outer decree, the session-write, the inner decree and the batch;
//   table (every node): SessionTable::Admit and Record of each write, with
//     --in-flight writes of one session outstanding (the saved-answer map's
//     inserts and erases).
// Figures for the benchmarks, never a pass/fail test; each is the fastest of
// --repeats runs of --writes writes (the least disturbed by other load).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "node/station/decree.h"
#include "node/station/sessions.h"
#include "node/station/version_state.h"

namespace {

using ts::station::Decree;
using ts::station::DecreeType;
using Clock = std::chrono::steady_clock;

// Defeats the optimizer: every result is folded into this, printed at the end.
size_t g_sink = 0;

template <class F>
double BestNsPerWrite(int repeats, int writes, F&& one) {
  double best = 1e18;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = Clock::now();
    for (int i = 0; i < writes; ++i) one(i);
    best = std::min(best, std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / writes);
  }
  return best;
}

Decree PutDecree(int key_size, int value_size) {
  ts::station::KvBatch b;
  ts::station::KvOp op;
  op.type = static_cast<uint16_t>(DecreeType::kKvPut);
  op.command.key = std::string(key_size, 'k');
  op.command.value = std::string(value_size, 'v');
  b.ops.push_back(std::move(op));
  Decree d;
  d.header.type = static_cast<uint16_t>(DecreeType::kKvPut);
  d.header.model_version = 2;
  d.tag = {1, 123456, 42};
  d.payload = ts::station::EncodeKvBatch(b);
  return d;
}

Decree Wrapped(const Decree& inner, uint64_t seq) {
  Decree outer;
  outer.header.type = static_cast<uint16_t>(DecreeType::kSessionWrite);
  outer.header.min_reader_version = "1.3.0";
  outer.tag = inner.tag;
  outer.payload = ts::station::EncodeSessionWrite(ts::station::SessionWrite{
      7, seq, seq > 8 ? seq - 8 : 1, inner.header.type, inner.header.model_version, inner.payload});
  return outer;
}

}  // namespace

int main(int argc, char** argv) {
  int writes = 200000, repeats = 5, key_size = 16, value_size = 100, in_flight = 8;
  bool json = false;
  CLI::App app{"tssessioncost: the CPU a put in a session costs one node beyond a plain put (encode, decode, "
               "session table), in ns per write",
               "tssessioncost"};
  app.add_option("--writes", writes, "Writes per run")->check(CLI::Range(1000, 100000000))->capture_default_str();
  app.add_option("--repeats", repeats, "Runs of each; the fastest counts")->check(CLI::Range(1, 100))->capture_default_str();
  app.add_option("--key-size", key_size, "Key bytes")->check(CLI::Range(1, 65536))->capture_default_str();
  app.add_option("--value-size", value_size, "Value bytes")->check(CLI::Range(0, 1 << 20))->capture_default_str();
  app.add_option("--in-flight", in_flight, "Writes of the session outstanding (answers kept)")
      ->check(CLI::Range(1, 4000))
      ->capture_default_str();
  app.add_flag("--json", json, "Print one JSON object");
  CLI11_PARSE(app, argc, argv);

  const Decree put = PutDecree(key_size, value_size);
  const std::string plain_bytes = ts::station::EncodeDecree(put);
  const std::string session_bytes = ts::station::EncodeDecree(Wrapped(put, 100));

  const double enc_plain = BestNsPerWrite(repeats, writes, [&](int) { g_sink += ts::station::EncodeDecree(put).size(); });
  const double enc_session = BestNsPerWrite(repeats, writes, [&](int i) {
    g_sink += ts::station::EncodeDecree(Wrapped(put, static_cast<uint64_t>(i) + 1)).size();
  });
  const double dec_plain = BestNsPerWrite(repeats, writes, [&](int) {
    Decree d;
    ts::station::KvBatch b;
    if (ts::station::DecodeDecree(plain_bytes, &d).ok() && ts::station::DecodeKvBatch(d.payload, &b).ok()) {
      g_sink += b.ops.size();
    }
  });
  const double dec_session = BestNsPerWrite(repeats, writes, [&](int) {
    Decree outer;
    ts::station::SessionWrite w;
    ts::station::KvBatch b;
    if (ts::station::DecodeDecree(session_bytes, &outer).ok() &&
        ts::station::DecodeSessionWrite(outer.payload, &w).ok() &&
        ts::station::DecodeKvBatch(ts::station::InnerDecree(&w, outer.tag).payload, &b).ok()) {
      g_sink += b.ops.size();
    }
  });
  ts::station::SessionTable t;
  uint64_t seq = 0;
  const double table = BestNsPerWrite(repeats, writes, [&](int i) {
    if (i == 0) {  // a fresh session for every run
      t = ts::station::SessionTable();
      t.Open(7, ts::station::SessionOpen{60000});
      seq = 0;
    }
    ++seq;
    const uint64_t lowest = seq > static_cast<uint64_t>(in_flight) ? seq - in_flight + 1 : 1;
    ts::station::SessionWrite w;
    w.session = 7;
    w.seq = seq;
    w.lowest_pending = lowest;
    ts::station::SavedAnswer a;
    if (t.Admit(w, &a) == ts::station::SessionTable::Verdict::kApply) {
      a.slot = 1000 + seq;
      t.Record(7, seq, std::move(a));
    }
  });

  const double extra = (enc_session - enc_plain) + (dec_session - dec_plain) + table;
  nlohmann::json j = {{"key_size", key_size},
                      {"value_size", value_size},
                      {"in_flight", in_flight},
                      {"decree_bytes_plain", plain_bytes.size()},
                      {"decree_bytes_session", session_bytes.size()},
                      {"encode_ns_plain", enc_plain},
                      {"encode_ns_session", enc_session},
                      {"decode_ns_plain", dec_plain},
                      {"decode_ns_session", dec_session},
                      {"table_ns", table},
                      {"leader_extra_ns", extra},
                      {"follower_extra_ns", (dec_session - dec_plain) + table}};
  j["checksum"] = g_sink;  // keeps every timed result alive
  if (json) {
    std::cout << j.dump() << '\n';
    return 0;
  }
  std::printf("a put of %d-byte key and %d-byte value: decree %zu bytes plain, %zu in a session\n", key_size,
              value_size, plain_bytes.size(), session_bytes.size());
  std::printf("encode (leader)        %8.1f ns plain  %8.1f ns in a session\n", enc_plain, enc_session);
  std::printf("decode (every node)    %8.1f ns plain  %8.1f ns in a session\n", dec_plain, dec_session);
  std::printf("session table          %8.1f ns a write (Admit + Record, %d in flight)\n", table, in_flight);
  std::printf("extra per write: leader %.1f ns, follower %.1f ns\n", extra, (dec_session - dec_plain) + table);
  return 0;
}

// tssnapshotcost: what taking a snapshot from a cut of the state costs, on
// the station's own code (node/station/snapshot_taker.h), set against the
// alternative of keeping the state in RocksDB and snapshotting it with a
// checkpoint:
//   apply: ns per put over existing keys, with no cut, and with a cut just
//     begun (every put keeps the entry it replaces: the worst case), and the
//     bytes the cut kept for them;
//   walk: ms per GB of state for the cut's walk alone, and for the taker's
//     steps (walk, encode, digest) into a sink that drops the records;
//   rocksdb (--rocksdb DIR): ns per put and per get into a RocksDB database
//     of the same state (no WAL: the replicated log is the state's WAL), and
//     the time a checkpoint of it takes.
// Figures for the benchmarks, never a pass/fail test; each timing is the
// fastest of --repeats runs.
#include <CLI/CLI.hpp>
#include <rocksdb/db.h>
#include <rocksdb/utilities/checkpoint.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "node/station/kv_store.h"
#include "node/station/snapshot_taker.h"

namespace {

using ts::station::Decree;
using ts::station::DecreeType;
using ts::station::KvStore;
using Clock = std::chrono::steady_clock;

size_t g_sink = 0;  // defeats the optimizer; printed at the end

std::string KeyOf(uint64_t i) {
  std::string digits = std::to_string(i);
  return "k" + std::string(15 - std::min<size_t>(15, digits.size()), '0') + digits;
}

Decree Put(const std::string& key, const std::string& value) {
  Decree d;
  d.header.type = static_cast<uint16_t>(DecreeType::kKvPut);
  d.header.model_version = 1;
  d.payload = ts::station::EncodeKvCommand(ts::station::KvCommand{key, value, "", false});
  return d;
}

class DropSink : public ts::station::RecordSink {
 public:
  ts::Status Add(std::string_view r) override {
    g_sink += r.size();
    return ts::Status::Ok();
  }
  ts::Status ReserveFirst(size_t) override { return ts::Status::Ok(); }
  ts::Status FillFirst(std::string_view r) override { return Add(r); }
};

double Ms(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

}  // namespace

int main(int argc, char** argv) {
  uint64_t keys = 1000000, puts = 200000;
  int value_size = 1024, repeats = 3;
  size_t step_bytes = 256 << 10;
  std::string rocks_dir;
  bool json = false;
  CLI::App app{"tssnapshotcost: the cost of snapshots taken from a cut of the state, against RocksDB with checkpoints",
               "tssnapshotcost"};
  app.add_option("--keys", keys, "Keys in the state (16-byte keys)")->check(CLI::Range(1000, 100000000))->capture_default_str();
  app.add_option("--value-size", value_size, "Value bytes")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  app.add_option("--puts", puts, "Puts per apply run")->check(CLI::Range(1000, 100000000))->capture_default_str();
  app.add_option("--step-bytes", step_bytes, "Budget of one step (tsnode: 262144)")->capture_default_str();
  app.add_option("--repeats", repeats, "Runs of each; the fastest counts")->check(CLI::Range(1, 100))->capture_default_str();
  app.add_option("--rocksdb", rocks_dir, "Also measure RocksDB in this directory (created; removed after)");
  bool sorted_fill = false;
  app.add_flag("--sorted-fill", sorted_fill,
               "Fill the state in key order (entries then lie in memory in the order a walk reads them); by "
               "default keys are put in random order, as a node's state grows, which scatters them");
  app.add_flag("--json", json, "One JSON object instead of text");
  CLI11_PARSE(app, argc, argv);

  const std::string value(value_size, 'v');
  KvStore kv;
  if (sorted_fill) {
    for (uint64_t i = 0; i < keys; ++i) kv.Append(KeyOf(i), value);
  } else {
    std::vector<uint64_t> order(keys);
    for (uint64_t i = 0; i < keys; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), std::mt19937_64(2));
    uint64_t slot = 0;
    for (uint64_t i : order) g_sink += static_cast<size_t>(kv.Apply(Put(KeyOf(i), value), ++slot).code);
  }
  const double state_gb = static_cast<double>(keys) * (16 + value_size) / 1e9;
  std::mt19937_64 rng(1);
  std::vector<Decree> decrees;
  decrees.reserve(puts);
  for (uint64_t i = 0; i < puts; ++i) decrees.push_back(Put(KeyOf(rng() % keys), std::string(value_size, 'w')));

  nlohmann::json out = {{"keys", keys},          {"value_size", value_size},  {"state_gb", state_gb},
                        {"step_bytes", step_bytes}, {"sorted_fill", sorted_fill}};
  // The walk first: freeing what a cut kept leaves glibc's allocator work
  // that would land in the next step (tsnode runs on tcmalloc).
  double walk_ms = 1e18, take_ms = 1e18, step_max_ms = 0;
  for (int r = 0; r < repeats; ++r) {
    kv.BeginCut();
    auto t0 = Clock::now();
    for (;;) {
      auto done = kv.WalkCut(step_bytes, [](const std::string& k, const ts::station::KvEntry& e) {
        g_sink += k.size();
        return k.size() + e.value.size() + 32;
      });
      if (!done.ok() || *done) break;
    }
    walk_ms = std::min(walk_ms, Ms(t0, Clock::now()));
    kv.EndCut();
    ts::station::SnapshotHeader h;
    h.min_reader_version = "1.1.0";  // as a node writes it: the digest in XXH3
    ts::station::SnapshotTaker taker(h, {}, kv);
    DropSink sink;
    t0 = Clock::now();
    for (;;) {
      const auto s0 = Clock::now();
      auto done = taker.Step(&sink, step_bytes);
      step_max_ms = std::max(step_max_ms, Ms(s0, Clock::now()));
      if (!done.ok() || *done) break;
    }
    take_ms = std::min(take_ms, Ms(t0, Clock::now()));
  }
  out["walk_ms_per_gb"] = walk_ms / state_gb;
  out["take_ms_per_gb"] = take_ms / state_gb;
  out["take_step_max_ms"] = step_max_ms;

  auto apply_ns = [&](bool cut) {
    double best = 1e18;
    size_t kept = 0;
    uint64_t slot = 1;
    for (int r = 0; r < repeats; ++r) {
      if (cut) kv.BeginCut();
      const auto t0 = Clock::now();
      for (const Decree& d : decrees) g_sink += static_cast<size_t>(kv.Apply(d, ++slot).code);
      best = std::min(best, Ms(t0, Clock::now()) * 1e6 / decrees.size());
      kept = std::max(kept, kv.cut_kept_bytes());
      kv.EndCut();
    }
    return std::make_pair(best, kept);
  };
  auto [plain_ns, unused] = apply_ns(false);
  (void)unused;
  auto [cut_ns, kept] = apply_ns(true);
  out["apply_ns_per_put"] = plain_ns;
  out["apply_ns_per_put_cut"] = cut_ns;
  out["cut_kept_bytes"] = kept;

  if (!rocks_dir.empty()) {
    std::filesystem::remove_all(rocks_dir);
    std::filesystem::create_directories(rocks_dir);
    rocksdb::Options o;
    o.create_if_missing = true;
    rocksdb::DB* raw = nullptr;
    if (rocksdb::Status st = rocksdb::DB::Open(o, rocks_dir + "/db", &raw); !st.ok()) {
      std::cerr << "tssnapshotcost: cannot open RocksDB in " << rocks_dir << ": " << st.ToString() << "\n";
      return 1;
    }
    std::unique_ptr<rocksdb::DB> db(raw);
    rocksdb::WriteOptions w;
    w.disableWAL = true;  // the replicated log is the state's WAL
    for (uint64_t i = 0; i < keys; ++i) (void)db->Put(w, KeyOf(i), value);
    double put_ns = 1e18, get_ns = 1e18;
    for (int r = 0; r < repeats; ++r) {
      auto t0 = Clock::now();
      for (const Decree& d : decrees) {
        ts::station::KvCommand c;
        (void)ts::station::DecodeKvCommand(d.payload, &c);
        (void)db->Put(w, c.key, c.value);
      }
      put_ns = std::min(put_ns, Ms(t0, Clock::now()) * 1e6 / decrees.size());
      std::string v;
      t0 = Clock::now();
      for (uint64_t i = 0; i < puts; ++i) {
        (void)db->Get(rocksdb::ReadOptions(), KeyOf(rng() % keys), &v);
        g_sink += v.size();
      }
      get_ns = std::min(get_ns, Ms(t0, Clock::now()) * 1e6 / puts);
    }
    double kv_get_ns = 1e18;
    for (int r = 0; r < repeats; ++r) {
      auto t0 = Clock::now();
      for (uint64_t i = 0; i < puts; ++i) {
        const ts::station::KvEntry* e = kv.Lookup(KeyOf(rng() % keys));
        g_sink += e ? e->value.size() : 0;
      }
      kv_get_ns = std::min(kv_get_ns, Ms(t0, Clock::now()) * 1e6 / puts);
    }
    rocksdb::Checkpoint* cp = nullptr;
    (void)rocksdb::Checkpoint::Create(db.get(), &cp);
    std::unique_ptr<rocksdb::Checkpoint> checkpoint(cp);
    auto t0 = Clock::now();
    rocksdb::Status s = checkpoint->CreateCheckpoint(rocks_dir + "/checkpoint");
    out["rocksdb_checkpoint_ms"] = s.ok() ? Ms(t0, Clock::now()) : -1.0;
    out["rocksdb_put_ns"] = put_ns;
    out["rocksdb_get_ns"] = get_ns;
    out["kv_get_ns"] = kv_get_ns;
    db.reset();
    std::filesystem::remove_all(rocks_dir);
  }
  out["sink"] = g_sink % 10;
  if (json) {
    std::cout << out.dump() << "\n";
    return 0;
  }
  std::printf("state: %llu keys of %d B values = %.2f GB\n", static_cast<unsigned long long>(keys), value_size, state_gb);
  std::printf("apply: %.0f ns/put, %.0f ns/put while a cut keeps every entry it replaces (%zu bytes kept for %llu puts)\n",
              plain_ns, cut_ns, kept, static_cast<unsigned long long>(puts));
  std::printf("walk: %.0f ms/GB for the cut alone, %.0f ms/GB for the taker's steps (walk, encode, digest); "
              "the longest step %.2f ms (%zu bytes a step)\n",
              walk_ms / state_gb, take_ms / state_gb, step_max_ms, step_bytes);
  if (out.contains("rocksdb_put_ns")) {
    std::printf("rocksdb: %.0f ns/put (no WAL), %.0f ns/get (the store's own: %.0f ns), checkpoint %.0f ms\n",
                out["rocksdb_put_ns"].get<double>(), out["rocksdb_get_ns"].get<double>(),
                out["kv_get_ns"].get<double>(), out["rocksdb_checkpoint_ms"].get<double>());
  }
  return 0;
}

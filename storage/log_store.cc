// LogStore on RocksDB; see log_store.h.
//
// Keys:   "m/cluster", "m/node", "m/promised", "m/chosen"   metadata
//         "e/" + big-endian u64 slot                        accepted entries
// Values: format byte (1) | CRC-32C (u32 LE) of what follows | fields (LE).
#include "storage/log_store.h"

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>

#include <cstring>

#include "consensus/crc32c.h"

namespace ts::storage {
namespace {

using consensus::Ballot;
using consensus::Entry;
using consensus::Slot;

constexpr uint8_t kFormat = 1;
constexpr size_t kHeaderBytes = 5;  // format + crc
const char kClusterKey[] = "m/cluster";
const char kNodeKey[] = "m/node";
const char kPromisedKey[] = "m/promised";
const char kChosenKey[] = "m/chosen";

void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}
void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}
uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{static_cast<uint8_t>(p[i])} << (8 * i);
  return v;
}
uint64_t GetU64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<uint8_t>(p[i])} << (8 * i);
  return v;
}

// Wraps `body` in the record header.
std::string Seal(std::string_view body) {
  std::string out;
  out.reserve(kHeaderBytes + body.size());
  out.push_back(static_cast<char>(kFormat));
  PutU32(&out, Crc32c(body));
  out.append(body);
  return out;
}

// Checks the header and returns the body, or Corruption naming `what`.
StatusOr<std::string_view> Unseal(std::string_view bytes, const std::string& what) {
  if (bytes.size() < kHeaderBytes) return Status::Corruption(what + ": record of " + std::to_string(bytes.size()) + " bytes is too short");
  if (static_cast<uint8_t>(bytes[0]) != kFormat)
    return Status::Corruption(what + ": unknown record format " + std::to_string(static_cast<uint8_t>(bytes[0])));
  std::string_view body = bytes.substr(kHeaderBytes);
  if (Crc32c(body) != GetU32(bytes.data() + 1)) return Status::Corruption(what + ": checksum mismatch");
  return body;
}

std::string EntryKey(Slot slot) {
  std::string k = "e/";
  for (int i = 7; i >= 0; --i) k.push_back(static_cast<char>(slot >> (8 * i)));
  return k;
}

Slot SlotOfKey(const rocksdb::Slice& key) {
  Slot s = 0;
  for (size_t i = 2; i < 10; ++i) s = (s << 8) | static_cast<uint8_t>(key[i]);
  return s;
}

bool IsEntryKey(const rocksdb::Slice& key) { return key.size() == 10 && key[0] == 'e' && key[1] == '/'; }

std::string EncodeU64Record(uint64_t v) {
  std::string body;
  PutU64(&body, v);
  return Seal(body);
}

StatusOr<uint64_t> DecodeU64Record(std::string_view bytes, const std::string& what) {
  auto body = Unseal(bytes, what);
  if (!body.ok()) return body.status();
  if (body->size() != 8) return Status::Corruption(what + ": expected 8 bytes, found " + std::to_string(body->size()));
  return GetU64(body->data());
}

Status FromRocks(const rocksdb::Status& s, const std::string& what) {
  if (s.ok()) return Status::Ok();
  if (s.IsCorruption()) return Status::Corruption(what + ": " + s.ToString());
  return Status::IoError(what + ": " + s.ToString());
}

}  // namespace

std::string EncodeBallotRecord(const Ballot& b) {
  std::string body;
  PutU64(&body, b.round);
  PutU32(&body, b.node);
  return Seal(body);
}

StatusOr<Ballot> DecodeBallotRecord(std::string_view bytes) {
  auto body = Unseal(bytes, "promised ballot");
  if (!body.ok()) return body.status();
  if (body->size() != 12) return Status::Corruption("promised ballot: expected 12 bytes, found " + std::to_string(body->size()));
  return Ballot{GetU64(body->data()), GetU32(body->data() + 8)};
}

std::string EncodeEntryRecord(const Entry& e) {
  std::string body;
  body.reserve(12 + e.value.size());
  PutU64(&body, e.ballot.round);
  PutU32(&body, e.ballot.node);
  body.append(e.value);
  return Seal(body);
}

StatusOr<Entry> DecodeEntryRecord(Slot slot, std::string_view bytes) {
  auto body = Unseal(bytes, "entry at slot " + std::to_string(slot));
  if (!body.ok()) return body.status();
  if (body->size() < 12) return Status::Corruption("entry at slot " + std::to_string(slot) + ": truncated ballot");
  Entry e;
  e.slot = slot;
  e.ballot = Ballot{GetU64(body->data()), GetU32(body->data() + 8)};
  e.value.assign(body->substr(12));
  return e;
}

LogStore::LogStore(std::unique_ptr<rocksdb::DB> db, StoreOptions options) : db_(std::move(db)), options_(options) {}
LogStore::~LogStore() = default;

StatusOr<std::unique_ptr<LogStore>> LogStore::Open(const std::string& dir, StoreOptions options) {
  rocksdb::Options o;
  o.create_if_missing = true;
  o.paranoid_checks = true;
  // The log is write-heavy and read mostly at start: a larger memtable means
  // fewer flushes; entries are small, so default compression costs more CPU
  // than it saves on a 2-core machine.
  o.write_buffer_size = 64 << 20;
  o.compression = rocksdb::kNoCompression;
  o.max_background_jobs = 2;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(o, dir, &raw);
  if (!s.ok()) {
    if (s.IsIOError() && s.ToString().find("lock") != std::string::npos) {
      return Status::IoError("data dir " + dir + " is in use by another process: " + s.ToString());
    }
    return FromRocks(s, "open " + dir);
  }
  std::unique_ptr<LogStore> store(new LogStore(std::unique_ptr<rocksdb::DB>(raw), options));
  std::string v;
  s = store->db_->Get(rocksdb::ReadOptions(), kChosenKey, &v);
  if (s.ok()) {
    auto c = DecodeU64Record(v, "chosen watermark");
    if (!c.ok()) return c.status();
    store->chosen_upto_ = *c;
  } else if (!s.IsNotFound()) {
    return FromRocks(s, "read chosen watermark");
  }
  return store;
}

Status LogStore::CheckIdentity(const NodeIdentity& id) {
  std::string cluster, node;
  rocksdb::Status sc = db_->Get(rocksdb::ReadOptions(), kClusterKey, &cluster);
  rocksdb::Status sn = db_->Get(rocksdb::ReadOptions(), kNodeKey, &node);
  if (sc.IsNotFound() && sn.IsNotFound()) {
    rocksdb::WriteBatch b;
    b.Put(kClusterKey, Seal(id.cluster_id));
    b.Put(kNodeKey, EncodeU64Record(id.node_id));
    rocksdb::WriteOptions wo;
    wo.sync = true;
    return FromRocks(db_->Write(wo, &b), "record identity");
  }
  if (!sc.ok()) return FromRocks(sc, "read cluster id");
  if (!sn.ok()) return FromRocks(sn, "read node id");
  auto stored_cluster = Unseal(cluster, "cluster id");
  if (!stored_cluster.ok()) return stored_cluster.status();
  auto stored_node = DecodeU64Record(node, "node id");
  if (!stored_node.ok()) return stored_node.status();
  if (*stored_cluster != id.cluster_id || *stored_node != id.node_id) {
    return Status::InvalidArgument("data dir belongs to cluster '" + std::string(*stored_cluster) + "' node " +
                                   std::to_string(*stored_node) + ", but this node was started as cluster '" +
                                   id.cluster_id + "' node " + std::to_string(id.node_id));
  }
  return Status::Ok();
}

Status LogStore::PutMeta(const std::string& name, const std::string& value) {
  rocksdb::WriteOptions wo;
  wo.sync = options_.sync;
  return FromRocks(db_->Put(wo, "x/" + name, Seal(value)), "write " + name);
}

StatusOr<std::string> LogStore::GetMeta(const std::string& name) const {
  std::string v;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), "x/" + name, &v);
  if (s.IsNotFound()) return Status::NotFound(name);
  if (!s.ok()) return FromRocks(s, "read " + name);
  auto body = Unseal(v, name);
  if (!body.ok()) return body.status();
  return std::string(*body);
}

StatusOr<consensus::Bootstrap> LogStore::LoadBootstrap() const {
  consensus::Bootstrap b;
  std::string v;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), kPromisedKey, &v);
  if (s.ok()) {
    auto p = DecodeBallotRecord(v);
    if (!p.ok()) return p.status();
    b.promised = *p;
  } else if (!s.IsNotFound()) {
    return FromRocks(s, "read promised ballot");
  }
  b.chosen_upto = chosen_upto_;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  for (it->Seek(EntryKey(chosen_upto_ + 1)); it->Valid() && IsEntryKey(it->key()); it->Next()) {
    auto e = DecodeEntryRecord(SlotOfKey(it->key()), std::string_view(it->value().data(), it->value().size()));
    if (!e.ok()) return e.status();
    b.unchosen.push_back(std::move(*e));
  }
  if (!it->status().ok()) return FromRocks(it->status(), "scan entries");
  return b;
}

Status LogStore::Persist(const consensus::Ready& ready) {
  if (!ready.promised && ready.entries.empty() && !ready.chosen_upto) return Status::Ok();
  rocksdb::WriteBatch batch;
  if (ready.promised) batch.Put(kPromisedKey, EncodeBallotRecord(*ready.promised));
  for (const Entry& e : ready.entries) batch.Put(EntryKey(e.slot), EncodeEntryRecord(e));
  if (ready.chosen_upto) batch.Put(kChosenKey, EncodeU64Record(*ready.chosen_upto));
  rocksdb::WriteOptions wo;
  // Only a promise or an acceptance must be on disk before the replies that
  // depend on it; a chosen mark alone is re-learned if a crash loses it.
  wo.sync = options_.sync && ready.NeedsSync();
  Status s = FromRocks(db_->Write(wo, &batch), "persist batch");
  if (s.ok() && ready.chosen_upto) chosen_upto_ = *ready.chosen_upto;
  return s;
}

StatusOr<std::vector<Entry>> LogStore::ReadRange(Slot from, Slot to) const {
  std::vector<Entry> out;
  if (from > to) return out;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  for (it->Seek(EntryKey(from)); it->Valid() && IsEntryKey(it->key()); it->Next()) {
    Slot slot = SlotOfKey(it->key());
    if (slot > to) break;
    auto e = DecodeEntryRecord(slot, std::string_view(it->value().data(), it->value().size()));
    if (!e.ok()) return e.status();
    out.push_back(std::move(*e));
  }
  if (!it->status().ok()) return FromRocks(it->status(), "scan entries");
  return out;
}

std::vector<Entry> LogStore::ReadChosen(Slot from, size_t max_bytes) const {
  std::vector<Entry> out;
  size_t bytes = 0;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  for (it->Seek(EntryKey(from)); it->Valid() && IsEntryKey(it->key()); it->Next()) {
    Slot slot = SlotOfKey(it->key());
    if (slot > chosen_upto_) break;
    auto e = DecodeEntryRecord(slot, std::string_view(it->value().data(), it->value().size()));
    if (!e.ok()) break;  // a corrupt record is not served; the node's own replay reports it
    bytes += consensus::EntryBytes(*e);
    if (bytes > max_bytes && !out.empty()) break;
    out.push_back(std::move(*e));
  }
  return out;
}

}  // namespace ts::storage

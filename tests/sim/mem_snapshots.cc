// MemSnapshots; see mem_snapshots.h.
#include "tests/sim/mem_snapshots.h"

#include <deque>

#include "storage/snapshot_format.h"

namespace ts::sim {

namespace {

// Records of a complete snapshot, parsed (and checked) up front.
class ParsedSource : public station::RecordSource {
 public:
  explicit ParsedSource(std::deque<std::string> records) : records_(std::move(records)) {}
  StatusOr<bool> Next(std::string* record) override {
    if (records_.empty()) return false;
    *record = std::move(records_.front());
    records_.pop_front();
    return true;
  }

 private:
  std::deque<std::string> records_;
};


}  // namespace

std::optional<station::SnapshotStore::Info> MemSnapshots::Newest() const {
  if (complete_.empty()) return std::nullopt;
  return Info{complete_.rbegin()->first, complete_.rbegin()->second.size()};
}

StatusOr<std::string> MemSnapshots::ReadRange(consensus::Slot slot, uint64_t offset, size_t max_bytes) const {
  auto it = complete_.find(slot);
  if (it == complete_.end()) return Status::NotFound("no snapshot of slot " + std::to_string(slot));
  if (offset > it->second.size()) return Status::InvalidArgument("offset past the snapshot's end");
  return it->second.substr(offset, max_bytes);
}

StatusOr<std::unique_ptr<station::RecordSource>> MemSnapshots::Open(consensus::Slot slot) const {
  auto it = complete_.find(slot);
  if (it == complete_.end()) return Status::NotFound("no snapshot of slot " + std::to_string(slot));
  storage::SnapshotParser parser;
  if (Status s = parser.Feed(it->second); !s.ok()) return s;
  if (Status s = parser.CheckComplete(); !s.ok()) return s;
  std::deque<std::string> records;
  std::string r;
  while (parser.NextRecord(&r)) records.push_back(std::move(r));
  return std::unique_ptr<station::RecordSource>(new ParsedSource(std::move(records)));
}

uint64_t MemSnapshots::IncomingBytes(consensus::Slot slot) {
  if (incoming_slot_ != slot) {
    incoming_slot_ = slot;
    incoming_.clear();
  }
  return incoming_.size();
}

Status MemSnapshots::AppendIncoming(consensus::Slot slot, uint64_t offset, std::string_view bytes) {
  IncomingBytes(slot);
  if (offset != incoming_.size()) {
    return Status::InvalidArgument("expected offset " + std::to_string(incoming_.size()) + ", got " +
                                   std::to_string(offset));
  }
  incoming_.append(bytes);
  return Status::Ok();
}

Status MemSnapshots::CommitIncoming(consensus::Slot slot) {
  if (incoming_slot_ != slot) return Status::InvalidArgument("no snapshot of slot " + std::to_string(slot) + " is being received");
  storage::SnapshotParser parser(storage::SnapshotParser::Records::kDiscard);
  if (Status s = parser.Feed(incoming_); !s.ok()) return s;
  if (Status s = parser.CheckComplete(); !s.ok()) return s;
  complete_[slot] = std::move(incoming_);
  AbandonIncoming();
  return Status::Ok();
}

void MemSnapshots::AbandonIncoming() {
  incoming_slot_ = 0;
  incoming_.clear();
}

StatusOr<std::string> MemSnapshots::Take(station::Station& st) {
  Sink sink;
  if (Status s = st.WriteSnapshot(&sink); !s.ok()) return s;
  return sink.Finish();
}

void MemSnapshots::KeepNewestTwo() {
  while (complete_.size() > 2) complete_.erase(complete_.begin());
}

std::optional<uint64_t> MemSnapshots::SizeOf(consensus::Slot slot) const {
  auto it = complete_.find(slot);
  if (it == complete_.end()) return std::nullopt;
  return it->second.size();
}

}  // namespace ts::sim

namespace ts::sim {

MemSnapshots::Sink::Sink() { storage::AppendSnapshotMagic(&out_); }

Status MemSnapshots::Sink::Add(std::string_view record) { return encoder_.Add(&out_, record); }

Status MemSnapshots::Sink::ReserveFirst(size_t bytes) {
  first_at_ = out_.size();
  return encoder_.ReserveFirst(&out_, bytes);
}

Status MemSnapshots::Sink::FillFirst(std::string_view record) {
  auto bytes = encoder_.FillFirst(record);
  if (!bytes.ok()) return bytes.status();
  out_.replace(first_at_, bytes->size(), *bytes);
  return Status::Ok();
}

std::string MemSnapshots::Sink::Finish() {
  out_ += encoder_.Finish();
  return std::move(out_);
}

}  // namespace ts::sim

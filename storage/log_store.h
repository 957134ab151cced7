// LogStore: the durable acceptor state of one node in RocksDB: the promised
// ballot, accepted entries by slot, the chosen watermark, and the node's
// identity (cluster id, node id). One Persist() call is one synced
// WriteBatch: one fsync per Ready batch, never one per decree.
//
// Every record carries a format byte and a CRC-32C; a record that fails
// either check is reported as Corruption, never returned as data.
//
// A damaged store is missing state: an acceptor must never vote with a
// shorter memory than it promised. So every Corruption a LogStore method
// returns names the data dir ("data dir DIR is damaged: ...") and ends with
// the way to rebuild the node (move the dir aside, start it empty with the
// same flags: it rejoins as a learner and catches up). Only a torn last WAL
// record, the unsynced tail a crash leaves, is dropped silently.
//
// Compaction: once the node holds a durable snapshot at slot S, CompactTo(S)
// drops the entries up to S; first_slot() is then S + 1 and the log answers
// nothing below it (a peer that far behind needs the snapshot). The space is
// reclaimed on a worker thread the store owns, so the event loop never
// waits for it: the entries live in a column family of their own, whose
// table files below S are dropped whole (see log_compactor.h).
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "consensus/replica.h"
#include "consensus/status.h"
#include "consensus/types.h"

namespace rocksdb {
class ColumnFamilyHandle;
class DB;
class WriteBatch;
}

namespace ts::storage {

class LogCompactor;  // the worker thread that reclaims compacted space (log_compactor.h)

struct NodeIdentity {
  std::string cluster_id;
  consensus::NodeId node_id = consensus::kNoNode;
};

struct StoreOptions {
  bool sync = true;  // false only for benchmarks that say so
};

class LogStore : public consensus::LogReader {
 public:
  // Opens (creating if missing) the store in `dir`. Errors: IoError when the
  // directory cannot be opened or locked (another tsnode uses it);
  // Corruption when RocksDB reports damage anywhere but in a torn last WAL
  // record (a damaged WAL record or table file, a bad MANIFEST), naming the
  // damaged file as RocksDB reports it, or when the chosen watermark fails
  // its checks. Never opens a store by dropping what follows a damage.
  static StatusOr<std::unique_ptr<LogStore>> Open(const std::string& dir, StoreOptions options = {});
  ~LogStore() override;

  // First open of a fresh store records `id`; later opens must present the
  // same cluster id and node id, else InvalidArgument naming both values.
  Status CheckIdentity(const NodeIdentity& id);

  // Durable state for Replica's constructor: promised ballot, chosen
  // watermark, and the accepted entries above the watermark.
  StatusOr<consensus::Bootstrap> LoadBootstrap() const;

  // Writes ready.promised, ready.entries and ready.chosen_upto (whichever are
  // set) in one WriteBatch, synced unless options.sync is false. Returns
  // IoError on failure: the caller must stop the node (never retry an fsync).
  // A Ready with none of the three set writes nothing. A batch holding only
  // chosen_upto is not synced (Ready::NeedsSync: it is re-learned if lost).
  // One writer at a time (tsnode's storage thread): the batch buffer is
  // reused. Reads (ReadRange, ReadChosen, the getters) may run on other
  // threads meanwhile.
  // InvalidArgument (nothing written) if ready.chosen_upto is below
  // first_slot() - 1: the watermark never goes back past a compaction,
  // whose slots the log no longer holds.
  Status Persist(const consensus::Ready& ready) { return Persist(ready, ready.NeedsSync()); }
  // The same, synced if `sync` (and options.sync): a writer that writes
  // several batches back to back syncs only the last, which makes the
  // earlier ones durable too (one WAL).
  Status Persist(const consensus::Ready& ready, bool sync);

  // Entries in [from, to] (inclusive), in slot order; missing slots are
  // skipped, and so is every slot below first_slot() (compacted: gone). Used
  // to replay the chosen log at start and by `tsctl log`.
  StatusOr<std::vector<consensus::Entry>> ReadRange(consensus::Slot from, consensus::Slot to) const;

  // consensus::LogReader: chosen entries from `from`, up to max_bytes.
  // Nothing at all if from < first_slot(): the log no longer starts there,
  // and entries from a later slot would read as a log without a gap (the
  // peer asking needs a snapshot instead).
  // The interface has no error path, so a corrupt record or a failed read
  // here stops the process with the reason on stderr, rather than serving a
  // silently short log (a storage error stops the node:
  // docs/design/consensus.md#storage-errors).
  std::vector<consensus::Entry> ReadChosen(consensus::Slot from, size_t max_bytes) const override;

  consensus::Slot chosen_upto() const { return chosen_upto_; }

  // The lowest slot the log may still hold: 1 until a compaction, then the
  // compaction point + 1. Always <= chosen_upto() + 1.
  consensus::Slot first_slot() const { return first_slot_; }

  // Deletes every entry with slot <= upto and records first_slot() = upto +
  // 1, in one unsynced write: the caller holds a durable snapshot at or
  // above `upto`, so a crash that loses the write only brings back entries
  // that a later CompactTo deletes again. Then asks the store's worker
  // thread to compact that key range so the space is reclaimed; requests
  // coalesce and this call never waits for them. A no-op if upto <
  // first_slot(). InvalidArgument (nothing written) if upto > chosen_upto()
  // (an unchosen entry may still be needed by phase 1) or upto is the
  // largest slot. IoError if the write fails; an error the worker met since
  // the last call (IoError, or Corruption naming the data dir) is returned
  // here: either way the caller must stop the node.
  Status CompactTo(consensus::Slot upto);

  // The node installed a snapshot at `slot` received from a peer (the
  // snapshot file is durable already). In one synced write: chosen_upto()
  // becomes max(chosen_upto(), slot), the entries with slot <= `slot` are
  // deleted and first_slot() becomes slot + 1. Entries above `slot` stay:
  // they are this acceptor's votes, chosen or not. Synced because the node
  // acts on the new watermark at once. InvalidArgument (nothing written) if
  // slot + 1 < first_slot() (the log was compacted past it: the snapshot is
  // older than state this node already holds) or slot is the largest slot;
  // otherwise the same errors as CompactTo.
  Status InstallSnapshotBase(consensus::Slot slot);

  // Blocks until every compaction requested so far has run (for tests and
  // tools; the event loop never calls it).
  void WaitForBackgroundWork();

  // What RocksDB says of its writes, for a log line when one has waited
  // long: whether it stops or slows them, and what it counts for that (the
  // memtables waiting for a flush, the default family's level-0 files
  // against its triggers), the log's level-0 files, the flushes and
  // compactions running. Safe from any thread, also while a write waits.
  std::string WriteStallReport() const;

  // How many entries Open moved out of the older layout's place (the
  // default column family) into the log's own; 0 for a store already in
  // this layout. Stores of this layout cannot be opened by an older tsnode.
  uint64_t moved_from_older_layout() const { return moved_from_older_layout_; }

  // Small node-level metadata outside the log (e.g. the last version heard
  // from each member), synced. GetMeta: NotFound if never written.
  Status PutMeta(const std::string& name, const std::string& value);
  StatusOr<std::string> GetMeta(const std::string& name) const;

 private:
  LogStore(std::string dir, std::unique_ptr<rocksdb::DB> db, rocksdb::ColumnFamilyHandle* log, StoreOptions options);
  // At open: moves entries a store of the older layout kept in the default
  // column family into the log's (record.h).
  Status MoveOlderLayoutEntries();
  // Deletes the entries <= upto and writes the new first slot (and the
  // chosen watermark if given) in one batch, then queues the compaction.
  Status DropThrough(consensus::Slot upto, std::optional<consensus::Slot> chosen, bool sync);

  std::string dir_;
  std::unique_ptr<rocksdb::DB> db_;
  rocksdb::ColumnFamilyHandle* log_;  // the entries' column family; ours to destroy before db_
  StoreOptions options_;
  uint64_t moved_from_older_layout_ = 0;
  // Written by the one writer (Persist, CompactTo, InstallSnapshotBase),
  // read by readers on other threads (ReadChosen, ReadRange).
  std::atomic<consensus::Slot> chosen_upto_{0};
  std::atomic<consensus::Slot> first_slot_{1};
  // Declared after db_ and reset first in the destructor: its thread uses
  // the DB until joined.
  std::unique_ptr<LogCompactor> compactor_;
  // Reused by every Persist so the hot path allocates only when a batch is
  // larger than any before it.
  std::unique_ptr<rocksdb::WriteBatch> batch_;
  std::string record_buf_;
};

// Record codecs, exposed for tests and the fuzzer: decoding never trusts its
// input and returns Corruption for anything malformed.
std::string EncodeEntryRecord(const consensus::Entry& e);
StatusOr<consensus::Entry> DecodeEntryRecord(consensus::Slot slot, std::string_view bytes);
std::string EncodeBallotRecord(const consensus::Ballot& b);
StatusOr<consensus::Ballot> DecodeBallotRecord(std::string_view bytes);

}  // namespace ts::storage

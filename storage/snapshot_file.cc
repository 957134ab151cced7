// Snapshot files on POSIX; see snapshot_file.h. Plain open/write/fsync/
// rename rather than iostreams: the errors must say which call failed and
// why (errno), and durability needs fsync of the file and of the directory.
#include "storage/snapshot_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "consensus/check.h"

namespace ts::storage {
namespace {

namespace fs = std::filesystem;
using consensus::Slot;

constexpr std::string_view kPrefix = "snapshot-";
constexpr size_t kSlotDigits = 20;  // UINT64_MAX has 20 digits
constexpr std::string_view kSnapSuffix = ".snap";
constexpr std::string_view kTmpSuffix = ".tmp";
constexpr std::string_view kPartSuffix = ".part";

std::string ErrnoText(int err) { return std::generic_category().message(err); }

Status IoErrorOf(const std::string& what, const std::string& path, int err) {
  return Status::IoError(what + " " + path + ": " + ErrnoText(err));
}

std::string Join(const std::string& dir, std::string_view name) { return dir + "/" + std::string(name); }

// The parent of `dir` as a path fsync can open ("." for a relative leaf).
std::string ParentOf(const std::string& dir) {
  fs::path p = fs::path(dir).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();  // "a/b/" -> "a/b"
  fs::path parent = p.parent_path();
  return parent.empty() ? "." : parent.string();
}

// Makes a rename, creation or removal in `dir` durable.
Status FsyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return IoErrorOf("open directory", dir, errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return IoErrorOf("fsync directory", dir, err);
  return Status::Ok();
}

// Creates `dir` if missing; a new directory is made durable in its parent,
// since the snapshots it will hold are only as durable as its own name.
Status EnsureDir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) == 0) return FsyncDir(ParentOf(dir));
  if (errno != EEXIST) return IoErrorOf("create snapshot directory", dir, errno);
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return IoErrorOf("stat", dir, errno);
  if (!S_ISDIR(st.st_mode)) return Status::IoError("snapshot directory " + dir + " exists and is not a directory");
  return Status::Ok();
}

// Writes all of `bytes` at `offset` (pwrite), across short writes and EINTR.
Status WriteAllAt(int fd, const std::string& path, std::string_view bytes, uint64_t offset) {
  while (!bytes.empty()) {
    ssize_t n = ::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return IoErrorOf("write", path, errno);
    if (n == 0) return Status::IoError("write " + path + ": no progress");
    bytes.remove_prefix(static_cast<size_t>(n));
    offset += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

// Reads up to `size` bytes at `offset`; fewer only at the end of the file.
StatusOr<size_t> ReadAt(int fd, const std::string& path, char* out, size_t size, uint64_t offset) {
  size_t got = 0;
  while (got < size) {
    ssize_t n = ::pread(fd, out + got, size - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return IoErrorOf("read", path, errno);
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  return got;
}

Status FsyncAndClose(int* fd, const std::string& path) {
  int rc = ::fsync(*fd);
  int err = errno;
  if (rc != 0) return IoErrorOf("fsync", path, err);
  rc = ::close(*fd);
  err = errno;
  *fd = -1;
  // close can report a deferred write error (NFS, some FUSE filesystems).
  if (rc != 0) return IoErrorOf("close", path, err);
  return Status::Ok();
}

// Renames `from` to `to` and makes the new name durable in `dir`.
Status RenameDurably(const std::string& from, const std::string& to, const std::string& dir) {
  if (::rename(from.c_str(), to.c_str()) != 0) return IoErrorOf("rename " + from + " to", to, errno);
  return FsyncDir(dir);
}

Status RemoveFile(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return IoErrorOf("remove", path, errno);
  return Status::Ok();
}

struct ParsedName {
  Slot slot = 0;
  std::string_view suffix;
};

// Parses "snapshot-<20 digits><suffix>" with a known suffix; nullopt for any
// other name (including a slot that does not fit 64 bits).
std::optional<ParsedName> ParseName(std::string_view name) {
  if (name.size() <= kPrefix.size() + kSlotDigits || name.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  std::string_view digits = name.substr(kPrefix.size(), kSlotDigits);
  std::string_view suffix = name.substr(kPrefix.size() + kSlotDigits);
  // Point at the constant, not into `name`, which the caller may move.
  if (suffix == kSnapSuffix) {
    suffix = kSnapSuffix;
  } else if (suffix == kTmpSuffix) {
    suffix = kTmpSuffix;
  } else if (suffix == kPartSuffix) {
    suffix = kPartSuffix;
  } else {
    return std::nullopt;
  }
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  ParsedName out;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out.slot);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  out.suffix = suffix;
  return out;
}

// The names of DIR's entries that parse as snapshot files. A missing DIR has
// none.
StatusOr<std::vector<std::pair<std::string, ParsedName>>> ScanDir(const std::string& dir) {
  std::vector<std::pair<std::string, ParsedName>> out;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec == std::errc::no_such_file_or_directory) return out;
  if (ec) return Status::IoError("list snapshot directory " + dir + ": " + ec.message());
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    std::string name = it->path().filename().string();
    if (auto parsed = ParseName(name)) out.emplace_back(std::move(name), *parsed);
  }
  if (ec) return Status::IoError("list snapshot directory " + dir + ": " + ec.message());
  return out;
}

}  // namespace

std::string SnapshotFileName(Slot slot, std::string_view suffix) {
  std::string digits = std::to_string(slot);
  return std::string(kPrefix) + std::string(kSlotDigits - digits.size(), '0') + digits + std::string(suffix);
}

// ---- SnapshotWriter ----

SnapshotWriter::SnapshotWriter(std::string dir, std::string tmp_path, std::string final_path, int fd)
    : dir_(std::move(dir)), tmp_path_(std::move(tmp_path)), final_path_(std::move(final_path)), fd_(fd) {}

StatusOr<std::unique_ptr<SnapshotWriter>> SnapshotWriter::Create(const std::string& dir, Slot slot) {
  Status s = EnsureDir(dir);
  if (!s.ok()) return s;
  std::string tmp = Join(dir, SnapshotFileName(slot, kTmpSuffix));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return IoErrorOf("create", tmp, errno);
  std::unique_ptr<SnapshotWriter> w(new SnapshotWriter(dir, tmp, Join(dir, SnapshotFileName(slot, kSnapSuffix)), fd));
  w->buffer_.reserve(kBufferBytes + kSnapshotRecordHeaderBytes);
  AppendSnapshotMagic(&w->buffer_);
  return w;
}

SnapshotWriter::~SnapshotWriter() {
  if (fd_ >= 0) ::close(fd_);
  // Nothing to report to from a destructor; a .tmp that survives a failed
  // unlink is removed by RemoveTemporaries at the next start.
  if (!committed_) (void)::unlink(tmp_path_.c_str());
}

Status SnapshotWriter::WriteAll(std::string_view bytes) {
  Status s = WriteAllAt(fd_, tmp_path_, bytes, size_);
  if (!s.ok()) {
    error_ = s;
    return s;
  }
  size_ += bytes.size();
  // Write-behind: start writing each finished chunk now and wait for the
  // one before it, so at most two chunks are ever dirty. Left to the final
  // fsync, a snapshot of hundreds of MB would reach the disk in one burst
  // and every node's log fsync would queue behind it. Only a hint (the
  // fsync at Commit is what makes the file durable), so errors are ignored.
  while (size_ - started_ >= kWriteBehindBytes) {
    (void)::sync_file_range(fd_, static_cast<off_t>(started_), static_cast<off_t>(kWriteBehindBytes),
                            SYNC_FILE_RANGE_WRITE);
    if (started_ >= kWriteBehindBytes) {
      (void)::sync_file_range(fd_, static_cast<off_t>(started_ - kWriteBehindBytes),
                              static_cast<off_t>(kWriteBehindBytes),
                              SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
    }
    started_ += kWriteBehindBytes;
  }
  return Status::Ok();
}

Status SnapshotWriter::Writable() const {
  if (!error_.ok()) return error_;
  if (committed_) return Status::InvalidArgument("snapshot " + final_path_ + " is already committed");
  return Status::Ok();
}

Status SnapshotWriter::Flush() {
  Status s = WriteAll(buffer_);
  buffer_.clear();
  return s;
}

Status SnapshotWriter::Add(std::string_view record) {
  if (Status w = Writable(); !w.ok()) return w;
  Status s = encoder_.AddHeader(&buffer_, record);
  if (!s.ok()) return Status::InvalidArgument(tmp_path_ + ": " + s.message());
  if (buffer_.size() + record.size() <= kBufferBytes) {
    buffer_.append(record);
    return Status::Ok();
  }
  // The buffer (ending with this record's header) goes out first; a record
  // too large to buffer then goes to the file without a copy.
  s = Flush();
  if (!s.ok()) return s;
  if (record.size() > kBufferBytes) return WriteAll(record);
  buffer_.append(record);
  return Status::Ok();
}

Status SnapshotWriter::ReserveFirst(size_t bytes) {
  if (Status w = Writable(); !w.ok()) return w;
  const uint64_t at = size_ + buffer_.size();
  Status s = encoder_.ReserveFirst(&buffer_, bytes);
  if (!s.ok()) return Status::InvalidArgument(tmp_path_ + ": " + s.message());
  first_at_ = at;
  return Status::Ok();
}

Status SnapshotWriter::FillFirst(std::string_view record) {
  if (Status w = Writable(); !w.ok()) return w;
  auto bytes = encoder_.FillFirst(record);
  if (!bytes.ok()) return Status::InvalidArgument(tmp_path_ + ": " + bytes.status().message());
  // The buffer goes to the file whole, so the placeholder is all in one or
  // all in the other.
  if (first_at_ >= size_) {
    std::memcpy(buffer_.data() + (first_at_ - size_), bytes->data(), bytes->size());
    return Status::Ok();
  }
  Status s = WriteAllAt(fd_, tmp_path_, *bytes, first_at_);
  if (!s.ok()) error_ = s;
  return s;
}

StatusOr<uint64_t> SnapshotWriter::Commit() {
  if (Status w = Writable(); !w.ok()) return w;
  if (encoder_.first_pending()) {
    return Status::InvalidArgument(tmp_path_ + ": the reserved first record was never filled");
  }
  buffer_ += encoder_.Finish();
  Status s = Flush();
  if (s.ok()) s = FsyncAndClose(&fd_, tmp_path_);
  if (s.ok()) {
    if (::rename(tmp_path_.c_str(), final_path_.c_str()) != 0) {
      s = IoErrorOf("rename " + tmp_path_ + " to", final_path_, errno);
    } else {
      committed_ = true;  // the .tmp name is gone: the destructor must not unlink it
      s = FsyncDir(dir_);
    }
  }
  if (!s.ok()) {
    error_ = s;
    return s;
  }
  buffer_ = std::string();
  return size_;
}

// ---- SnapshotReader ----

StatusOr<std::unique_ptr<SnapshotReader>> SnapshotReader::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) return Status::NotFound("snapshot " + path + " does not exist");
  if (fd < 0) return IoErrorOf("open", path, errno);
  return std::unique_ptr<SnapshotReader>(new SnapshotReader(path, fd));
}

SnapshotReader::~SnapshotReader() {
  if (fd_ >= 0) ::close(fd_);
}

StatusOr<bool> SnapshotReader::Next(std::string* record) {
  // Each pass either returns or reads another chunk; a file of N bytes ends
  // after at most N / kReadBytes + 1 reads.
  for (;;) {
    if (parser_.NextRecord(record)) return true;
    if (eof_) {
      Status s = parser_.CheckComplete();
      if (s.ok()) return false;
      return Status::Corruption("snapshot file " + path_ + " is damaged: " + s.message());
    }
    buf_.resize(kReadBytes);
    auto n = ReadAt(fd_, path_, buf_.data(), buf_.size(), parser_.offset());
    if (!n.ok()) return n.status();
    if (*n == 0) {
      eof_ = true;
      continue;
    }
    Status s = parser_.Feed(std::string_view(buf_.data(), *n));
    if (!s.ok()) return Status::Corruption("snapshot file " + path_ + " is damaged: " + s.message());
  }
}

// ---- serving a peer ----

StatusOr<std::string> ReadSnapshotRange(const std::string& path, uint64_t offset, size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) return Status::NotFound("snapshot " + path + " does not exist");
  if (fd < 0) return IoErrorOf("open", path, errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return IoErrorOf("stat", path, err);
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  if (offset > size) {
    ::close(fd);
    return Status::InvalidArgument("snapshot " + path + ": offset " + std::to_string(offset) + " is beyond its " +
                                   std::to_string(size) + " bytes");
  }
  const uint64_t n = std::min<uint64_t>({max_bytes, kSnapshotRangeBytesMax, size - offset});
  std::string out(static_cast<size_t>(n), '\0');
  auto got = ReadAt(fd, path, out.data(), out.size(), offset);
  ::close(fd);
  if (!got.ok()) return got.status();
  out.resize(*got);
  return out;
}

StatusOr<uint64_t> SnapshotFileSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::NotFound("snapshot " + path + " does not exist");
    return IoErrorOf("stat", path, errno);
  }
  return static_cast<uint64_t>(st.st_size);
}

// ---- IncomingSnapshot ----

IncomingSnapshot::IncomingSnapshot(std::string dir, std::string part_path, std::string final_path, int fd)
    : dir_(std::move(dir)), part_path_(std::move(part_path)), final_path_(std::move(final_path)), fd_(fd) {}

StatusOr<std::unique_ptr<IncomingSnapshot>> IncomingSnapshot::Create(const std::string& dir, Slot slot) {
  Status s = EnsureDir(dir);
  if (!s.ok()) return s;
  std::string part = Join(dir, SnapshotFileName(slot, kPartSuffix));
  int fd = ::open(part.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return IoErrorOf("open", part, errno);
  std::unique_ptr<IncomingSnapshot> in(
      new IncomingSnapshot(dir, part, Join(dir, SnapshotFileName(slot, kSnapSuffix)), fd));
  s = in->Replay();
  if (!s.ok()) return s;
  return in;
}

// Feeds what an earlier run received back through the parser, so a resumed
// transfer is checked as a whole. A damaged leftover is only a cache of a
// peer's bytes: it is emptied and the transfer restarts.
Status IncomingSnapshot::Replay() {
  std::string buf(SnapshotReader::kReadBytes, '\0');
  for (;;) {
    auto n = ReadAt(fd_, part_path_, buf.data(), buf.size(), size_);
    if (!n.ok()) return n.status();
    if (*n == 0) return Status::Ok();
    Status s = parser_.Feed(std::string_view(buf.data(), *n));
    if (!s.ok()) {
      restart_reason_ = Status::Corruption("leftover " + part_path_ + " discarded: " + s.message());
      if (::ftruncate(fd_, 0) != 0) return IoErrorOf("truncate", part_path_, errno);
      parser_ = SnapshotParser(SnapshotParser::Records::kDiscard);
      size_ = 0;
      return Status::Ok();
    }
    size_ += *n;
  }
}

IncomingSnapshot::~IncomingSnapshot() {
  if (fd_ >= 0) ::close(fd_);
}

Status IncomingSnapshot::Append(uint64_t offset, std::string_view bytes) {
  if (closed_) return Status::InvalidArgument(part_path_ + " is already committed or abandoned");
  if (!error_.ok()) return error_;
  if (offset != size_) {
    return Status::InvalidArgument(part_path_ + ": chunk at offset " + std::to_string(offset) + ", expected offset " +
                                   std::to_string(size_));
  }
  Status s = parser_.Feed(bytes);
  if (!s.ok()) {
    error_ = Status::Corruption("snapshot received in " + part_path_ + " is damaged: " + s.message());
    return error_;
  }
  s = WriteAllAt(fd_, part_path_, bytes, size_);
  if (!s.ok()) {
    error_ = s;
    return s;
  }
  size_ += bytes.size();
  TS_CHECK(size_ == parser_.offset(), "the file holds exactly the bytes the parser checked");
  return Status::Ok();
}

StatusOr<std::string> IncomingSnapshot::Commit() {
  if (closed_) return Status::InvalidArgument(part_path_ + " is already committed or abandoned");
  if (!error_.ok()) return error_;
  Status s = parser_.CheckComplete();
  if (!s.ok()) return Status::Corruption("snapshot received in " + part_path_ + " is incomplete: " + s.message());
  s = FsyncAndClose(&fd_, part_path_);
  if (s.ok()) s = RenameDurably(part_path_, final_path_, dir_);
  if (!s.ok()) {
    error_ = s;
    return s;
  }
  closed_ = true;
  return final_path_;
}

Status IncomingSnapshot::Abandon(FileRemover* closer) {
  if (closed_) return Status::Ok();
  closed_ = true;
  Status s = RemoveFile(part_path_);  // the open descriptor keeps the blocks
  if (fd_ >= 0) {
    if (closer != nullptr) {
      closer->Close(fd_);
    } else {
      ::close(fd_);
    }
  }
  fd_ = -1;
  return s;
}

// ---- directory ----

StatusOr<std::vector<SnapshotFileInfo>> ListSnapshots(const std::string& dir) {
  auto names = ScanDir(dir);
  if (!names.ok()) return names.status();
  std::vector<SnapshotFileInfo> out;
  for (const auto& [name, parsed] : *names) {
    if (parsed.suffix != kSnapSuffix) continue;
    std::string path = Join(dir, name);
    auto size = SnapshotFileSize(path);
    // Removed since the scan (by a FileRemover, say): not listed.
    if (size.status().code() == Status::Code::kNotFound) continue;
    if (!size.ok()) return size.status();
    out.push_back(SnapshotFileInfo{parsed.slot, std::move(path), *size});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.slot < b.slot; });
  return out;
}

StatusOr<std::vector<std::string>> SnapshotsBelow(const std::string& dir, Slot slot) {
  auto names = ScanDir(dir);
  if (!names.ok()) return names.status();
  std::vector<std::string> out;
  for (const auto& [name, parsed] : *names) {
    if (parsed.suffix == kSnapSuffix && parsed.slot < slot) out.push_back(Join(dir, name));
  }
  return out;
}

Status RemoveTemporaries(const std::string& dir, std::optional<Slot> keep_part_slot) {
  auto names = ScanDir(dir);
  if (!names.ok()) return names.status();
  for (const auto& [name, parsed] : *names) {
    const bool temporary = parsed.suffix == kTmpSuffix || parsed.suffix == kPartSuffix;
    const bool kept = parsed.suffix == kPartSuffix && keep_part_slot == parsed.slot;
    if (!temporary || kept) continue;
    Status s = RemoveFile(Join(dir, name));
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace ts::storage

// See store_errors.h.
#include "storage/store_errors.h"

#include <filesystem>
#include <system_error>

namespace ts::storage {

Status IoError(const std::string& what, const rocksdb::Status& s) { return Status::IoError(what + ": " + s.ToString()); }

std::string RebuildAdvice(const std::string& dir) {
  std::error_code ec;
  std::string abs = std::filesystem::absolute(dir, ec).string();
  if (ec || abs.empty()) abs = dir;
  return "This node's acceptor state is damaged: it must not vote with a shorter memory. To rebuild it, stop it, "
         "move the data dir aside (mv " +
         abs + " " + abs +
         ".damaged), and start it again with an empty data dir and the same flags: it rejoins the existing cluster "
         "as a non-voting learner, catches up, and the leader makes it a voter again.";
}

Status Damaged(const std::string& dir, const Status& s) {
  if (s.code() != Status::Code::kCorruption) return s;
  return Status::Corruption("data dir " + dir + " is damaged: " + s.message() + ". " + RebuildAdvice(dir));
}

}  // namespace ts::storage

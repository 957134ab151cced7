// Reading fields of a command's or a snapshot's JSON without exceptions:
// each reader checks presence, type and bounds and says which field is
// wrong. Commands arrive from clients and from the log, snapshots from files
// and from peers, so every byte is hostile until checked
// (docs/design/wire.md#untrusted-input).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "consensus/status.h"

namespace ts::deploy {

constexpr size_t kNameBytesMax = 128;
constexpr size_t kJsonDepthMax = 32;
constexpr size_t kCommandBytesMax = 256 * 1024;
// Deepest nesting of a snapshot dump: five levels down to an LRP's stored
// definition plus the definition's own kDefinitionDepthMax (lrp.cc asserts
// that it fits), with room to spare.
constexpr size_t kSnapshotDepthMax = 32;

// A name: 1..128 bytes of [A-Za-z0-9._/-].
bool ValidName(const std::string& s);
// An endpoint or a route: 1..256 bytes of printable ASCII other than space,
// quote and backslash (host:port, /api/v1/*, ...).
bool ValidToken(const std::string& s);

// Parses a command's JSON text: an object, at most kCommandBytesMax bytes
// and kJsonDepthMax levels deep (checked before nlohmann's recursive parser
// sees it).
StatusOr<nlohmann::json> ParseCommandJson(std::string_view text);

// Parses a snapshot's JSON text: an object at most kSnapshotDepthMax levels
// deep (checked before nlohmann's recursive code sees it). Corruption if not.
// No size cap here: the caller already holds the bytes, and a reachable
// state has no useful bound below the memory it takes.
StatusOr<nlohmann::json> ParseSnapshotJson(std::string_view text);

// Where `got` first differs from `want`, in key order ("" if they are
// equal), as `path` extended to that place and what differs:
// "sched/a/counts/total: does not match the state it describes",
// "lrp/g: unexpected field 'x'". Recurses only as deep as both go.
std::string FirstDifference(const nlohmann::json& want, const nlohmann::json& got, const std::string& path);

// One value inside a snapshot's JSON, with its path for messages. Every
// reader returns Corruption naming the path ("snapshot field
// sched/a/rooms/3/status: ..."): a snapshot that does not decode is damaged,
// not a client's mistake. Holds a pointer: the JSON must outlive it.
class SnapshotReader {
 public:
  SnapshotReader(const nlohmann::json& j, std::string path) : j_(&j), path_(std::move(path)) {}

  const nlohmann::json& json() const { return *j_; }
  const std::string& path() const { return path_; }
  // Corruption("snapshot field PATH: what").
  Status Bad(const std::string& what) const;
  Status ExpectObject() const;
  Status ExpectArray() const;
  // The reader of member `key` of this object, or of one child met while
  // iterating (`key` is a member name or an array index).
  Status At(const char* key, SnapshotReader* out) const;
  SnapshotReader Child(const std::string& key, const nlohmann::json& v) const;

  // This value as a string, a name (ValidName), a token (ValidToken), an
  // integer in lo..hi, or a boolean.
  Status String(std::string* out) const;
  Status Name(std::string* out) const;
  Status Token(std::string* out) const;
  Status U64(uint64_t lo, uint64_t hi, uint64_t* out) const;
  Status U32(uint32_t lo, uint32_t hi, uint32_t* out) const;
  Status Bool(bool* out) const;
  // The same for member `key`, which must be present.
  Status StringAt(const char* key, std::string* out) const;
  Status NameAt(const char* key, std::string* out) const;
  Status U64At(const char* key, uint64_t lo, uint64_t hi, uint64_t* out) const;
  Status U32At(const char* key, uint32_t lo, uint32_t hi, uint32_t* out) const;

 private:
  const nlohmann::json* j_;
  std::string path_;
};

class Fields {
 public:
  explicit Fields(const nlohmann::json& j) : j_(j) {}
  // Required string field that must be a valid name.
  Status Name(const char* key, std::string* out) const;
  // Optional string (absent leaves *out alone).
  Status OptString(const char* key, size_t max_bytes, std::string* out) const;
  Status OptUint(const char* key, uint64_t lo, uint64_t hi, std::optional<uint32_t>* out) const;
  Status Uint(const char* key, uint64_t lo, uint64_t hi, uint32_t* out) const;
  Status OptBool(const char* key, bool* out) const;
  bool Has(const char* key) const { return j_.contains(key); }

 private:
  const nlohmann::json& j_;
};

// Restores a state kept as a JSON object of named items (what Snapshot()
// returns): each item through restore_item(reader, name) into the caller's
// fresh state, then `snapshot_of()` (that state's Snapshot()) must equal the
// input exactly, so whatever the readers did not look at (unknown fields,
// derived values, order) is checked too. Exceptions become Corruption; the
// caller swaps the fresh state in only on Ok.
template <class Item, class SnapshotOf>
Status RestoreObjectSnapshot(const nlohmann::json& snapshot, const char* path, const char* what, Item&& restore_item,
                             SnapshotOf&& snapshot_of) {
  try {
    SnapshotReader r(snapshot, path);
    if (Status s = r.ExpectObject(); !s.ok()) return s;
    for (const auto& [name, body] : snapshot.items()) {
      SnapshotReader one = r.Child(name, body);
      if (Status s = restore_item(one, name); !s.ok()) return s;
    }
    std::string diff = FirstDifference(snapshot_of(), snapshot, path);
    if (!diff.empty()) return Status::Corruption("snapshot field " + diff);
    return Status::Ok();
  } catch (const std::exception& e) {
    return Status::Corruption(std::string(what) + " snapshot could not be decoded: " + e.what());
  }
}

}  // namespace ts::deploy

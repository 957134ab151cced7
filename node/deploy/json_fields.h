// Reading fields of a command's JSON object without exceptions: each reader
// checks presence, type and bounds and says which field is wrong. Commands
// arrive from clients and from the log, so every byte is hostile until
// checked (DESIGN.md section 7).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "consensus/status.h"

namespace ts::deploy {

constexpr size_t kNameBytesMax = 128;
constexpr size_t kJsonDepthMax = 32;
constexpr size_t kCommandBytesMax = 256 * 1024;

// A name: 1..128 bytes of [A-Za-z0-9._/-].
bool ValidName(const std::string& s);
// An endpoint or a route: 1..256 bytes of printable ASCII other than space,
// quote and backslash (host:port, /api/v1/*, ...).
bool ValidToken(const std::string& s);

// Parses a command's JSON text: an object, at most kCommandBytesMax bytes
// and kJsonDepthMax levels deep (checked before nlohmann's recursive parser
// sees it).
StatusOr<nlohmann::json> ParseCommandJson(std::string_view text);

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

}  // namespace ts::deploy

// Field readers for command JSON; see json_fields.h.
#include "node/deploy/json_fields.h"

namespace ts::deploy {

bool ValidName(const std::string& s) {
  if (s.empty() || s.size() > kNameBytesMax) return false;
  for (char ch : s) {
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
              ch == '_' || ch == '/' || ch == '-';
    if (!ok) return false;
  }
  return true;
}

bool ValidToken(const std::string& s) {
  if (s.empty() || s.size() > 256) return false;
  for (char ch : s) {
    if (ch <= ' ' || ch > '~' || ch == '"' || ch == '\\') return false;
  }
  return true;
}

StatusOr<nlohmann::json> ParseCommandJson(std::string_view text) {
  if (text.size() > kCommandBytesMax) {
    return Status::InvalidArgument("command larger than " + std::to_string(kCommandBytesMax) + " bytes");
  }
  // nlohmann's parser recurses per nesting level: bound the depth first.
  size_t depth = 0;
  bool in_string = false, escaped = false;
  for (char ch : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (ch == '\\') escaped = true;
      else if (ch == '"') in_string = false;
      continue;
    }
    if (ch == '"') in_string = true;
    else if (ch == '{' || ch == '[') {
      if (++depth > kJsonDepthMax) return Status::InvalidArgument("command nested too deeply");
    } else if ((ch == '}' || ch == ']') && depth > 0) {
      --depth;
    }
  }
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::InvalidArgument("command is not valid JSON");
  if (!j.is_object()) return Status::InvalidArgument("command must be a JSON object");
  return j;
}

Status Fields::Name(const char* key, std::string* out) const {
  auto it = j_.find(key);
  if (it == j_.end()) return Status::InvalidArgument(std::string("missing field '") + key + "'");
  if (!it->is_string() || !ValidName(it->get<std::string>())) {
    return Status::InvalidArgument(std::string("field '") + key + "' must be a name of 1.." +
                                   std::to_string(kNameBytesMax) + " characters [A-Za-z0-9._/-]");
  }
  *out = it->get<std::string>();
  return Status::Ok();
}

Status Fields::OptString(const char* key, size_t max_bytes, std::string* out) const {
  auto it = j_.find(key);
  if (it == j_.end()) return Status::Ok();
  if (!it->is_string() || it->get_ref<const std::string&>().size() > max_bytes) {
    return Status::InvalidArgument(std::string("field '") + key + "' must be a string of at most " +
                                   std::to_string(max_bytes) + " bytes");
  }
  *out = it->get<std::string>();
  return Status::Ok();
}

Status Fields::OptUint(const char* key, uint64_t lo, uint64_t hi, std::optional<uint32_t>* out) const {
  auto it = j_.find(key);
  if (it == j_.end()) return Status::Ok();
  // Parsed text gives unsigned numbers; JSON built in code may hold signed ones.
  bool in_range = it->is_number_unsigned() ? it->get<uint64_t>() >= lo && it->get<uint64_t>() <= hi
                  : it->is_number_integer() ? it->get<int64_t>() >= 0 && static_cast<uint64_t>(it->get<int64_t>()) >= lo &&
                                                  static_cast<uint64_t>(it->get<int64_t>()) <= hi
                                            : false;
  if (!in_range) {
    return Status::InvalidArgument(std::string("field '") + key + "' must be an integer in " + std::to_string(lo) +
                                   ".." + std::to_string(hi));
  }
  *out = static_cast<uint32_t>(it->is_number_unsigned() ? it->get<uint64_t>() : static_cast<uint64_t>(it->get<int64_t>()));
  return Status::Ok();
}

Status Fields::Uint(const char* key, uint64_t lo, uint64_t hi, uint32_t* out) const {
  std::optional<uint32_t> v;
  if (Status s = OptUint(key, lo, hi, &v); !s.ok()) return s;
  if (!v) return Status::InvalidArgument(std::string("missing field '") + key + "'");
  *out = *v;
  return Status::Ok();
}

Status Fields::OptBool(const char* key, bool* out) const {
  auto it = j_.find(key);
  if (it == j_.end()) return Status::Ok();
  if (!it->is_boolean()) return Status::InvalidArgument(std::string("field '") + key + "' must be true or false");
  *out = it->get<bool>();
  return Status::Ok();
}

}  // namespace ts::deploy

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

namespace {

// nlohmann's parser, dump and comparison recurse per nesting level: the
// depth is bounded before any of them sees the text. Up to the first syntax
// error (where the parser stops) this counts exactly the parser's depth.
bool DepthWithin(std::string_view text, size_t depth_max) {
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
      if (++depth > depth_max) return false;
    } else if ((ch == '}' || ch == ']') && depth > 0) {
      --depth;
    }
  }
  return true;
}

// A key or index for a message: hostile keys can be long.
std::string Shown(const std::string& key) { return key.size() > 64 ? key.substr(0, 64) + "..." : key; }

std::string Join(const std::string& path, const std::string& key) {
  return path.empty() ? Shown(key) : path + "/" + Shown(key);
}

std::string FirstDifferenceAt(const nlohmann::json& want, const nlohmann::json& got, const std::string& path) {
  std::string where = path.empty() ? "(top level)" : path;
  if (want.is_object() && got.is_object()) {
    for (const auto& [key, value] : got.items()) {
      if (!want.contains(key)) return where + ": unexpected field '" + Shown(key) + "'";
    }
    for (const auto& [key, value] : want.items()) {
      auto it = got.find(key);
      if (it == got.end()) return where + ": missing field '" + Shown(key) + "'";
      std::string d = FirstDifferenceAt(value, *it, Join(path, key));
      if (!d.empty()) return d;
    }
    return "";
  }
  if (want.is_array() && got.is_array()) {
    if (want.size() != got.size()) {
      return where + ": " + std::to_string(got.size()) + " items where the state has " + std::to_string(want.size());
    }
    for (size_t i = 0; i < want.size(); ++i) {
      std::string d = FirstDifferenceAt(want[i], got[i], Join(path, std::to_string(i)));
      if (!d.empty()) return d;
    }
    return "";
  }
  // Scalars. A number keeps its kind (1.0 is not 1 in a dump); signed and
  // unsigned integers are one kind, since JSON built in code holds signed ones.
  bool same = want.is_number_integer() && got.is_number_integer() ? want == got
              : want.type() == got.type()                          ? want == got
                                                                   : false;
  return same ? "" : where + ": does not match the state it describes";
}

}  // namespace

StatusOr<nlohmann::json> ParseCommandJson(std::string_view text) {
  if (text.size() > kCommandBytesMax) {
    return Status::InvalidArgument("command larger than " + std::to_string(kCommandBytesMax) + " bytes");
  }
  if (!DepthWithin(text, kJsonDepthMax)) return Status::InvalidArgument("command nested too deeply");
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::InvalidArgument("command is not valid JSON");
  if (!j.is_object()) return Status::InvalidArgument("command must be a JSON object");
  return j;
}

StatusOr<nlohmann::json> ParseSnapshotJson(std::string_view text) {
  if (!DepthWithin(text, kSnapshotDepthMax)) {
    return Status::Corruption("snapshot nested deeper than " + std::to_string(kSnapshotDepthMax) + " levels");
  }
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return Status::Corruption("snapshot is not valid JSON (" + std::to_string(text.size()) + " bytes)");
  }
  if (!j.is_object()) return Status::Corruption("snapshot must be a JSON object");
  return j;
}

std::string FirstDifference(const nlohmann::json& want, const nlohmann::json& got, const std::string& path) {
  return FirstDifferenceAt(want, got, path);
}

Status SnapshotReader::Bad(const std::string& what) const {
  return Status::Corruption("snapshot field " + (path_.empty() ? std::string("(top level)") : path_) + ": " + what);
}

Status SnapshotReader::ExpectObject() const { return j_->is_object() ? Status::Ok() : Bad("must be an object"); }

Status SnapshotReader::ExpectArray() const { return j_->is_array() ? Status::Ok() : Bad("must be a list"); }

Status SnapshotReader::At(const char* key, SnapshotReader* out) const {
  if (Status s = ExpectObject(); !s.ok()) return s;
  auto it = j_->find(key);
  if (it == j_->end()) return Bad(std::string("missing field '") + key + "'");
  *out = Child(key, *it);
  return Status::Ok();
}

SnapshotReader SnapshotReader::Child(const std::string& key, const nlohmann::json& v) const {
  return SnapshotReader(v, Join(path_, key));
}

Status SnapshotReader::String(std::string* out) const {
  if (!j_->is_string()) return Bad("must be a string");
  *out = j_->get_ref<const std::string&>();
  return Status::Ok();
}

Status SnapshotReader::Name(std::string* out) const {
  if (!j_->is_string() || !ValidName(j_->get_ref<const std::string&>())) {
    return Bad("must be a name of 1.." + std::to_string(kNameBytesMax) + " characters [A-Za-z0-9._/-]");
  }
  *out = j_->get_ref<const std::string&>();
  return Status::Ok();
}

Status SnapshotReader::Token(std::string* out) const {
  if (!j_->is_string() || !ValidToken(j_->get_ref<const std::string&>())) {
    return Bad("must be 1..256 printable characters without space, quote or backslash");
  }
  *out = j_->get_ref<const std::string&>();
  return Status::Ok();
}

Status SnapshotReader::U64(uint64_t lo, uint64_t hi, uint64_t* out) const {
  // Parsed text gives unsigned numbers; JSON built in code may hold signed ones.
  std::optional<uint64_t> v;
  if (j_->is_number_unsigned()) v = j_->get<uint64_t>();
  else if (j_->is_number_integer() && j_->get<int64_t>() >= 0) v = static_cast<uint64_t>(j_->get<int64_t>());
  if (!v || *v < lo || *v > hi) return Bad("must be an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
  *out = *v;
  return Status::Ok();
}

Status SnapshotReader::U32(uint32_t lo, uint32_t hi, uint32_t* out) const {
  uint64_t v = 0;
  if (Status s = U64(lo, hi, &v); !s.ok()) return s;
  *out = static_cast<uint32_t>(v);
  return Status::Ok();
}

Status SnapshotReader::Bool(bool* out) const {
  if (!j_->is_boolean()) return Bad("must be true or false");
  *out = j_->get<bool>();
  return Status::Ok();
}

Status SnapshotReader::StringAt(const char* key, std::string* out) const {
  SnapshotReader r = *this;
  if (Status s = At(key, &r); !s.ok()) return s;
  return r.String(out);
}

Status SnapshotReader::NameAt(const char* key, std::string* out) const {
  SnapshotReader r = *this;
  if (Status s = At(key, &r); !s.ok()) return s;
  return r.Name(out);
}

Status SnapshotReader::U64At(const char* key, uint64_t lo, uint64_t hi, uint64_t* out) const {
  SnapshotReader r = *this;
  if (Status s = At(key, &r); !s.ok()) return s;
  return r.U64(lo, hi, out);
}

Status SnapshotReader::U32At(const char* key, uint32_t lo, uint32_t hi, uint32_t* out) const {
  SnapshotReader r = *this;
  if (Status s = At(key, &r); !s.ok()) return s;
  return r.U32(lo, hi, out);
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

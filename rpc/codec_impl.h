// The bounded Cereal archives behind rpc/codec.h (included by it; not meant
// to be included on its own).
//
// Layout: integers are fixed-width little-endian, packed byte by byte (the
// host's layout never leaks onto the wire); floating point is its IEEE 754
// bits as an integer of the same width; bool is one byte, 0 or 1; enums are
// their underlying integer (callers validate the value); a length (Cereal's
// SizeTag: strings, vectors, maps) is a u32; a variant is its i32 index, then
// the alternative.
//
// Two layouts, by wire version (rpc/frame.h):
//   1  positional: the fields of a struct one after another, nothing around
//      them (1.1.0's layout, byte for byte); trailing bytes are refused.
//   2  enveloped: every struct (a class with its own serialize, save or load)
//      is preceded by its body's length (u32) and schema version (u16). A
//      reader takes the fields it knows in order; a field past the end of
//      the body keeps its default (an older writer did not have it), and
//      bytes left in the body after the last known field are skipped (a
//      newer writer appended them). Fields are therefore only ever appended.
//      A struct whose fields an older peer must not receive at all writes
//      them under `if (WireVersionOf(ar) >= N)`.
//
// Hostile input (docs/design/wire.md#untrusted-input): every length is checked against the bytes
// left in the buffer BEFORE Cereal resizes anything (each element costs at
// least one byte, so size <= bytes left is a sound bound). Vectors of
// non-byte elements also grow element by element as bytes are consumed, so
// a lying length cannot make the decoder allocate sizeof(T) times the
// payload up front. Errors throw cereal::Exception inside the decoder, and
// DecodeBounded turns every exception into a Status: nothing escapes it.
#pragma once

#include <cereal/cereal.hpp>
#include <cereal/types/common.hpp>
#include <cereal/types/map.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/variant.hpp>
#include <cereal/types/vector.hpp>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "consensus/status.h"

namespace ts::rpc {

// Appends to a caller's string. Encoding cannot fail for any value the
// protocol produces (frames are capped far below 4 GiB).
class BoundedOutputArchive : public cereal::OutputArchive<BoundedOutputArchive, cereal::AllowEmptyClassElision> {
 public:
  explicit BoundedOutputArchive(std::string* out, uint8_t wire_version = 1)
      : cereal::OutputArchive<BoundedOutputArchive, cereal::AllowEmptyClassElision>(this),
        out_(out),
        wire_version_(wire_version) {}
  void SaveBytes(const void* data, size_t size) { out_->append(static_cast<const char*>(data), size); }
  uint8_t wire_version() const { return wire_version_; }

  // Envelopes (wire version 2): a placeholder length and the schema version
  // now, the length patched in once the body is written.
  void BeginEnvelope(uint16_t schema) {
    open_.push_back(out_->size());
    char head[6] = {0, 0, 0, 0, static_cast<char>(schema & 0xff), static_cast<char>(schema >> 8)};
    out_->append(head, sizeof(head));
  }
  void EndEnvelope() {
    size_t at = open_.back();
    open_.pop_back();
    size_t body = out_->size() - at - 6;
    if (body > std::numeric_limits<uint32_t>::max()) {
      std::fprintf(stderr, "rpc codec: a struct of %zu bytes does not fit its u32 envelope\n", body);
      std::abort();
    }
    for (size_t i = 0; i < 4; ++i) (*out_)[at + i] = static_cast<char>(body >> (8 * i));
  }

 private:
  std::string* out_;
  uint8_t wire_version_;
  std::vector<size_t> open_;  // where each open envelope's length goes
};

// Reads from [data, data + size) only; never past it, never from a stream.
class BoundedInputArchive : public cereal::InputArchive<BoundedInputArchive, cereal::AllowEmptyClassElision> {
  using Base = cereal::InputArchive<BoundedInputArchive, cereal::AllowEmptyClassElision>;

 public:
  BoundedInputArchive(const char* data, size_t size, uint8_t wire_version = 1)
      : Base(this), p_(data), end_(data + size), wire_version_(wire_version) {}
  // Throws cereal::Exception if fewer than `size` bytes are left (in the
  // innermost open envelope, with wire version 2).
  void LoadBytes(void* dst, size_t size) {
    if (size > left()) {
      throw cereal::Exception("truncated: need " + std::to_string(size) + " bytes, " + std::to_string(left()) +
                              " left");
    }
    if (size > 0) std::memcpy(dst, p_, size);
    p_ += size;
  }
  // Bytes left to read: in the innermost open envelope, else in the buffer.
  size_t left() const { return static_cast<size_t>(Limit() - p_); }
  uint8_t wire_version() const { return wire_version_; }

  // Hides Cereal's operator(): every value read goes through LoadOne, so
  // that the direct fields of an enveloped struct past its body's end keep
  // their defaults. Cereal's own loaders call ar(...) on this type too.
  template <class... Ts>
  BoundedInputArchive& operator()(Ts&&... args) {
    (LoadOne(std::forward<Ts>(args)), ...);
    return *this;
  }

  void BeginEnvelope() {
    uint32_t body = 0;
    unsigned char head[6];
    LoadBytes(head, sizeof(head));
    for (size_t i = 0; i < 4; ++i) body |= uint32_t{head[i]} << (8 * i);
    if (body > left()) {
      throw cereal::Exception("a struct of " + std::to_string(body) + " bytes exceeds the " + std::to_string(left()) +
                              " bytes left");
    }
    open_.push_back(Envelope{p_ + body, depth_});
  }
  void EndEnvelope() {
    p_ = open_.back().end;  // skips what a newer writer appended
    open_.pop_back();
  }

 private:
  struct Envelope {
    const char* end;
    size_t depth;  // LoadOne's depth at which the struct's own fields are read
  };
  const char* Limit() const { return open_.empty() ? end_ : open_.back().end; }

  template <class T>
  void LoadOne(T&& t) {
    if (!open_.empty() && open_.back().depth == depth_ && p_ == open_.back().end) {
      // An older writer had no such field: it keeps (is given) its default.
      using U = std::remove_cvref_t<T>;
      if constexpr (requires { t.value; }) {
        t.value = std::remove_cvref_t<decltype(t.value)>{};
      } else if constexpr (std::is_default_constructible_v<U> && std::is_assignable_v<U&, U>) {
        t = U{};
      } else {
        // Only Cereal's helpers (a map's item, say) are neither; they are
        // never a struct's own field, so this is not reached.
        throw cereal::Exception("a value past the end of its struct that has no default");
      }
      return;
    }
    ++depth_;
    Base::operator()(std::forward<T>(t));
    --depth_;
  }

  const char* p_;
  const char* end_;
  uint8_t wire_version_;
  size_t depth_ = 0;
  std::vector<Envelope> open_;
};

// The wire version an archive writes or reads (1 for any other archive).
template <class A>
uint8_t WireVersionOf(const A& ar) {
  if constexpr (std::is_same_v<A, BoundedOutputArchive> || std::is_same_v<A, BoundedInputArchive>) {
    return ar.wire_version();
  } else {
    return 1;
  }
}

// A struct's schema version in its envelope: 1 unless the struct says
// otherwise with `static constexpr uint16_t kSchemaVersion`. Readers do not
// need it to skip or default fields; it tells a person (and a test) which
// layout of the struct a sample holds.
template <class T>
constexpr uint16_t SchemaVersionOf() {
  if constexpr (requires { T::kSchemaVersion; }) {
    return T::kSchemaVersion;
  } else {
    return 1;
  }
}

namespace codec_detail {

// Unsigned integer of the same width as arithmetic type T.
template <class T>
using UintOf = std::conditional_t<
    sizeof(T) == 1, uint8_t,
    std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;

// BinaryData (raw byte runs) is supported for byte-sized elements only, so
// that Cereal serializes vectors of wider integers element by element in the
// explicit little-endian layout instead of memcpy'ing host words.
template <class T>
constexpr bool IsByteRun() {
  using U = std::remove_cv_t<std::remove_pointer_t<T>>;
  return std::is_void_v<U> || std::is_same_v<U, char> || std::is_same_v<U, signed char> ||
         std::is_same_v<U, unsigned char> || std::is_same_v<U, std::byte>;
}

// Whether T is one of ours (it serializes itself): those get envelopes.
template <class T, class A>
constexpr bool IsEnveloped() {
  using U = std::remove_cv_t<T>;
  return std::is_class_v<U> && (cereal::traits::has_member_serialize<U, A>::value ||
                                cereal::traits::has_member_save<U, A>::value ||
                                cereal::traits::has_member_load<U, A>::value);
}

}  // namespace codec_detail

// Cereal calls prologue before and epilogue after every value it processes;
// with wire version 2 they open and close the envelope of each struct.
template <class T>
void prologue(BoundedOutputArchive& ar, const T&) {
  if constexpr (codec_detail::IsEnveloped<T, BoundedOutputArchive>()) {
    if (ar.wire_version() >= 2) ar.BeginEnvelope(SchemaVersionOf<std::remove_cv_t<T>>());
  }
}
template <class T>
void epilogue(BoundedOutputArchive& ar, const T&) {
  if constexpr (codec_detail::IsEnveloped<T, BoundedOutputArchive>()) {
    if (ar.wire_version() >= 2) ar.EndEnvelope();
  }
}
template <class T>
void prologue(BoundedInputArchive& ar, const T&) {
  if constexpr (codec_detail::IsEnveloped<T, BoundedInputArchive>()) {
    if (ar.wire_version() >= 2) ar.BeginEnvelope();
  }
}
template <class T>
void epilogue(BoundedInputArchive& ar, const T&) {
  if constexpr (codec_detail::IsEnveloped<T, BoundedInputArchive>()) {
    if (ar.wire_version() >= 2) ar.EndEnvelope();
  }
}

template <class T>
std::enable_if_t<std::is_arithmetic_v<T>> CEREAL_SAVE_FUNCTION_NAME(BoundedOutputArchive& ar, const T& t) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8, "unsupported width");
  using U = codec_detail::UintOf<T>;
  U u;
  if constexpr (std::is_same_v<T, bool>) {
    u = t ? 1 : 0;
  } else if constexpr (std::is_integral_v<T>) {
    u = static_cast<U>(t);
  } else {
    u = std::bit_cast<U>(t);
  }
  unsigned char buf[sizeof(T)];
  for (size_t i = 0; i < sizeof(T); ++i) buf[i] = static_cast<unsigned char>(u >> (8 * i));
  ar.SaveBytes(buf, sizeof(T));
}

template <class T>
std::enable_if_t<std::is_arithmetic_v<T>> CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, T& t) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8, "unsupported width");
  using U = codec_detail::UintOf<T>;
  unsigned char buf[sizeof(T)];
  ar.LoadBytes(buf, sizeof(T));
  U u = 0;
  for (size_t i = 0; i < sizeof(T); ++i) u = static_cast<U>(u | (static_cast<U>(buf[i]) << (8 * i)));
  if constexpr (std::is_same_v<T, bool>) {
    // Any other byte would make a bool whose load is undefined behaviour.
    if (u > 1) throw cereal::Exception("bool byte " + std::to_string(u) + " is neither 0 nor 1");
    t = (u == 1);
  } else if constexpr (std::is_integral_v<T>) {
    t = static_cast<T>(u);
  } else {
    t = std::bit_cast<T>(u);
  }
}

template <class T>
void CEREAL_SERIALIZE_FUNCTION_NAME(BoundedOutputArchive& ar, cereal::NameValuePair<T>& t) {
  ar(t.value);
}
template <class T>
void CEREAL_SERIALIZE_FUNCTION_NAME(BoundedInputArchive& ar, cereal::NameValuePair<T>& t) {
  ar(t.value);
}

template <class T>
void CEREAL_SAVE_FUNCTION_NAME(BoundedOutputArchive& ar, const cereal::SizeTag<T>& t) {
  if (t.size > std::numeric_limits<uint32_t>::max()) {
    // Unreachable for protocol values (frames are capped at a few MiB); a
    // silently truncated length would corrupt the stream, so stop instead.
    std::fprintf(stderr, "rpc codec: a length of %llu does not fit the u32 wire field\n",
                 static_cast<unsigned long long>(t.size));
    std::abort();
  }
  ar(static_cast<uint32_t>(t.size));
}
template <class T>
void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, cereal::SizeTag<T>& t) {
  uint32_t n = 0;
  ar(n);
  // The check that keeps a 16-byte payload from asking for 1 GiB: it runs
  // before Cereal resizes the string or container this length is for.
  if (n > ar.left()) {
    throw cereal::Exception("length " + std::to_string(n) + " exceeds the " + std::to_string(ar.left()) +
                            " bytes left");
  }
  t.size = n;
}

template <class T, std::enable_if_t<codec_detail::IsByteRun<T>(), int> = 0>
void CEREAL_SAVE_FUNCTION_NAME(BoundedOutputArchive& ar, const cereal::BinaryData<T>& bd) {
  ar.SaveBytes(bd.data, static_cast<size_t>(bd.size));
}
template <class T, std::enable_if_t<codec_detail::IsByteRun<T>(), int> = 0>
void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, cereal::BinaryData<T>& bd) {
  ar.LoadBytes(bd.data, static_cast<size_t>(bd.size));
}

// Vectors (bool excepted: Cereal's own bit-by-bit load is already bounded by
// the size check). More specialized than Cereal's overloads, so it wins.
template <class T, class A, std::enable_if_t<!std::is_same_v<T, bool>, int> = 0>
void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, std::vector<T, A>& v) {
  cereal::size_type n = 0;
  ar(cereal::make_size_tag(n));  // n <= bytes left, checked above
  v.clear();
  if constexpr (codec_detail::IsByteRun<T>() || (std::is_arithmetic_v<T> && sizeof(T) == 1)) {
    v.resize(static_cast<size_t>(n));  // one byte each: at most the bytes left
    ar.LoadBytes(v.data(), static_cast<size_t>(n));
  } else {
    // Grow only as elements actually decode: memory stays proportional to
    // the bytes consumed, whatever n claims.
    v.reserve(std::min<size_t>(static_cast<size_t>(n), 1024));
    for (cereal::size_type i = 0; i < n; ++i) {
      v.emplace_back();
      ar(v.back());
    }
  }
}

// Maps: Cereal's loader leaves each key and value uninitialized before it
// reads them, which the compiler cannot follow through LoadOne; these are
// value-initialized first. Same layout as Cereal's.
template <class K, class V, class C, class A>
void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, std::map<K, V, C, A>& map) {
  cereal::size_type n = 0;
  ar(cereal::make_size_tag(n));  // n <= bytes left, checked above
  map.clear();
  auto hint = map.begin();
  for (cereal::size_type i = 0; i < n; ++i) {
    K key{};
    V value{};
    ar(cereal::make_map_item(key, value));
    hint = map.emplace_hint(hint, std::move(key), std::move(value));
  }
}

template <class T>
std::string EncodeBounded(const T& value, uint8_t wire_version) {
  std::string out;
  {
    BoundedOutputArchive ar(&out, wire_version);
    ar(value);
  }
  return out;
}

template <class T>
Status DecodeBounded(std::string_view bytes, T* out, uint8_t wire_version) {
  // Decode into a fresh value so *out is untouched on failure.
  T value{};
  try {
    BoundedInputArchive ar(bytes.data(), bytes.size(), wire_version);
    ar(value);
    if (ar.left() != 0) {
      return Status::Corruption(std::to_string(ar.left()) + " trailing bytes after a complete value");
    }
  } catch (const std::exception& e) {
    // cereal::Exception for malformed input (truncation, a length past the
    // end, a bad bool or variant index). Nothing may cross this edge.
    return Status::Corruption(std::string("malformed payload: ") + e.what());
  } catch (...) {
    return Status::Corruption("malformed payload");
  }
  *out = std::move(value);
  return Status::Ok();
}

}  // namespace ts::rpc

CEREAL_REGISTER_ARCHIVE(ts::rpc::BoundedOutputArchive)
CEREAL_REGISTER_ARCHIVE(ts::rpc::BoundedInputArchive)
CEREAL_SETUP_ARCHIVE_TRAITS(ts::rpc::BoundedInputArchive, ts::rpc::BoundedOutputArchive)

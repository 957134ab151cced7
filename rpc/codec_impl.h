// The bounded Cereal archives behind rpc/codec.h. Integers are fixed-width
// little-endian; a length (Cereal's SizeTag) is a u32 that must not exceed
// the bytes left in the buffer, checked BEFORE Cereal resizes a string or
// vector (each element costs at least one byte, so this bound is sound).
// Bools must be 0 or 1. Errors throw cereal::Exception inside the decoder,
// which DecodeBounded turns into a Status; nothing escapes it.
#pragma once

#include <cereal/cereal.hpp>
#include <cereal/types/common.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/variant.hpp>
#include <cereal/types/vector.hpp>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

#include "consensus/status.h"

namespace ts::rpc {

class BoundedOutputArchive : public cereal::OutputArchive<BoundedOutputArchive, cereal::AllowEmptyClassElision> {
 public:
  explicit BoundedOutputArchive(std::string* out)
      : cereal::OutputArchive<BoundedOutputArchive, cereal::AllowEmptyClassElision>(this), out_(out) {}
  void SaveBytes(const void* data, size_t size) { out_->append(static_cast<const char*>(data), size); }

 private:
  std::string* out_;
};

class BoundedInputArchive : public cereal::InputArchive<BoundedInputArchive, cereal::AllowEmptyClassElision> {
 public:
  BoundedInputArchive(const char* data, size_t size)
      : cereal::InputArchive<BoundedInputArchive, cereal::AllowEmptyClassElision>(this), p_(data), left_(size) {}
  void LoadBytes(void* dst, size_t size) {
    if (size > left_) throw cereal::Exception("truncated: need " + std::to_string(size) + " bytes, " + std::to_string(left_) + " left");
    if (size > 0) std::memcpy(dst, p_, size);
    p_ += size;
    left_ -= size;
  }
  size_t left() const { return left_; }

 private:
  const char* p_;
  size_t left_;
};

template <class T>
std::enable_if_t<std::is_arithmetic_v<T>> CEREAL_SAVE_FUNCTION_NAME(BoundedOutputArchive& ar, const T& t) {
  static_assert(!std::is_floating_point_v<T> || sizeof(T) == 8 || sizeof(T) == 4);
  unsigned char buf[sizeof(T)];
  if constexpr (std::is_same_v<T, bool>) {
    buf[0] = t ? 1 : 0;
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    U u = static_cast<U>(t);
    for (size_t i = 0; i < sizeof(T); ++i) buf[i] = static_cast<unsigned char>(u >> (8 * i));
  } else {
    std::memcpy(buf, &t, sizeof(T));  // IEEE 754 on every supported (little-endian) host
  }
  ar.SaveBytes(buf, sizeof(T));
}

template <class T>
std::enable_if_t<std::is_arithmetic_v<T>> CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, T& t) {
  unsigned char buf[sizeof(T)];
  ar.LoadBytes(buf, sizeof(T));
  if constexpr (std::is_same_v<T, bool>) {
    if (buf[0] > 1) throw cereal::Exception("bool byte " + std::to_string(buf[0]) + " is neither 0 nor 1");
    t = buf[0] == 1;
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    U u = 0;
    for (size_t i = 0; i < sizeof(T); ++i) u |= static_cast<U>(U{buf[i]} << (8 * i));
    t = static_cast<T>(u);
  } else {
    std::memcpy(&t, buf, sizeof(T));
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
  if (t.size > std::numeric_limits<uint32_t>::max()) throw cereal::Exception("length too large to encode");
  uint32_t n = static_cast<uint32_t>(t.size);
  ar(n);
}
template <class T>
void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, cereal::SizeTag<T>& t) {
  uint32_t n = 0;
  ar(n);
  if (n > ar.left()) {
    throw cereal::Exception("length " + std::to_string(n) + " exceeds the " + std::to_string(ar.left()) + " bytes left");
  }
  t.size = n;
}

template <class T>
void CEREAL_SAVE_FUNCTION_NAME(BoundedOutputArchive& ar, const cereal::BinaryData<T>& bd) {
  ar.SaveBytes(bd.data, static_cast<size_t>(bd.size));
}
template <class T>
void CEREAL_LOAD_FUNCTION_NAME(BoundedInputArchive& ar, cereal::BinaryData<T>& bd) {
  ar.LoadBytes(bd.data, static_cast<size_t>(bd.size));
}

template <class T>
std::string EncodeBounded(const T& value) {
  std::string out;
  {
    BoundedOutputArchive ar(&out);
    ar(value);
  }
  return out;
}

template <class T>
Status DecodeBounded(std::string_view bytes, T* out) {
  try {
    BoundedInputArchive ar(bytes.data(), bytes.size());
    ar(*out);
    if (ar.left() != 0) return Status::Corruption(std::to_string(ar.left()) + " trailing bytes after the message");
  } catch (const std::exception& e) {
    // cereal::Exception for malformed input; std::bad_alloc cannot happen
    // past the size check, but no exception may cross this edge.
    return Status::Corruption(std::string("malformed payload: ") + e.what());
  }
  return Status::Ok();
}

}  // namespace ts::rpc

CEREAL_REGISTER_ARCHIVE(ts::rpc::BoundedOutputArchive)
CEREAL_REGISTER_ARCHIVE(ts::rpc::BoundedInputArchive)
CEREAL_SETUP_ARCHIVE_TRAITS(ts::rpc::BoundedInputArchive, ts::rpc::BoundedOutputArchive)

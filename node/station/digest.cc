// LogDigest and SequenceHash; see digest.h.
#include "node/station/digest.h"

#include <cstdio>
#include <new>

#include "node/station/decree.h"

// The library's functions inlined here: the log digest's calls are short.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace ts::station {

namespace {

constexpr uint64_t kFnvPrime = 0x100000001b3ull;

}  // namespace

uint64_t Fnv1a(uint64_t h, std::string_view bytes) {
  for (unsigned char ch : bytes) {
    h ^= ch;
    h *= kFnvPrime;
  }
  return h;
}

std::string Hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

DigestHash DigestHashAfter(const std::optional<Semver>& marker, const std::optional<Semver>& downgrade) {
  if (!marker || *marker < kXxh3DigestSince) return DigestHash::kFnv1a;
  if (downgrade && *downgrade < kXxh3DigestSince) return DigestHash::kFnv1a;
  return DigestHash::kXxh3;
}

void LogDigest::Add(consensus::Slot slot, std::string_view bytes) {
  if (hash() == DigestHash::kXxh3) {
    uint64_t record[3] = {h_, slot, XXH3_64bits(bytes.data(), bytes.size())};
    h_ = XXH3_64bits(record, sizeof record);
  } else {
    char le[8];
    for (int i = 0; i < 8; ++i) le[i] = static_cast<char>(slot >> (8 * i));
    h_ = Fnv1a(Fnv1a(h_, std::string_view(le, 8)), bytes);
  }
  // What decides the hash of the next slots: decoded only for the two
  // decree types that can change it.
  if (HasDecreeType(bytes, DecreeType::kVersionMarker)) {
    Decree d;
    VersionMarker m;
    if (DecodeDecree(bytes, &d).ok() && DecodeVersionMarker(d.payload, &m).ok()) {
      if (auto v = Semver::Parse(m.version)) marker_ = *v;
    }
  } else if (HasDecreeType(bytes, DecreeType::kDowngrade)) {
    Decree d;
    Downgrade g;
    if (DecodeDecree(bytes, &d).ok() && DecodeDowngrade(d.payload, &g).ok()) {
      if (g.cancel) downgrade_.reset();
      else if (auto v = Semver::Parse(g.target)) downgrade_ = *v;
    }
  }
}

std::string LogDigest::Hex() const { return Hex64(h_); }

void LogDigest::Restore(uint64_t value, const std::optional<Semver>& marker, const std::optional<Semver>& downgrade) {
  h_ = value;
  marker_ = marker;
  downgrade_ = downgrade;
}

SequenceHash::SequenceHash(DigestHash hash) {
  if (hash != DigestHash::kXxh3) return;
  XXH3_state_t* s = XXH3_createState();
  if (s == nullptr) throw std::bad_alloc();
  XXH3_64bits_reset(s);
  xxh3_ = s;
}

SequenceHash::~SequenceHash() {
  if (xxh3_ != nullptr) XXH3_freeState(static_cast<XXH3_state_t*>(xxh3_));
}

void SequenceHash::Add(std::string_view bytes) {
  if (xxh3_ == nullptr) {
    fnv_ = Fnv1a(fnv_, bytes);
    fnv_ = (fnv_ ^ 0xff) * kFnvPrime;
    return;
  }
  auto* s = static_cast<XXH3_state_t*>(xxh3_);
  uint64_t n = bytes.size();
  XXH3_64bits_update(s, &n, sizeof n);
  XXH3_64bits_update(s, bytes.data(), bytes.size());
}

std::string SequenceHash::Hex() const {
  return Hex64(xxh3_ == nullptr ? fnv_ : XXH3_64bits_digest(static_cast<const XXH3_state_t*>(xxh3_)));
}

}  // namespace ts::station

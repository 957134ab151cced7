// CRC-32C, reflected polynomial 0x82F63B78: the SSE4.2 crc32 instruction
// where the CPU has it (chosen once, at the first call), else a table
// slicing by 8 bytes. Both give the same values (crc32c_test compares them).
#include "consensus/crc32c.h"

#include <array>
#include <cstring>

namespace ts {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;

struct Tables {
  std::array<std::array<uint32_t, 256>, 8> t{};
  constexpr Tables() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i) {
      for (size_t s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
    }
  }
};

constexpr Tables kTables;

}  // namespace

uint32_t Crc32cTable(const void* data, size_t size, uint32_t crc) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = ~crc;
  while (size >= 8) {
    uint32_t lo;
    uint32_t hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= c;  // little-endian hosts only (x86-64, aarch64); checked in CMake
    c = kTables.t[7][lo & 0xFF] ^ kTables.t[6][(lo >> 8) & 0xFF] ^ kTables.t[5][(lo >> 16) & 0xFF] ^
        kTables.t[4][lo >> 24] ^ kTables.t[3][hi & 0xFF] ^ kTables.t[2][(hi >> 8) & 0xFF] ^
        kTables.t[1][(hi >> 16) & 0xFF] ^ kTables.t[0][hi >> 24];
    p += 8;
    size -= 8;
  }
  while (size-- > 0) c = kTables.t[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
  return ~c;
}

#if defined(__x86_64__)
namespace {

__attribute__((target("sse4.2"))) uint32_t Crc32cSse42(const void* data, size_t size, uint32_t crc) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t c = ~crc;
  while (size >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = __builtin_ia32_crc32di(c, word);
    p += 8;
    size -= 8;
  }
  auto c32 = static_cast<uint32_t>(c);
  while (size-- > 0) c32 = __builtin_ia32_crc32qi(c32, *p++);
  return ~c32;
}

using CrcFn = uint32_t (*)(const void*, size_t, uint32_t);

}  // namespace

bool Crc32cUsesHardware() {
  static const bool hw = __builtin_cpu_supports("sse4.2");
  return hw;
}

uint32_t Crc32c(const void* data, size_t size, uint32_t crc) {
  static const CrcFn fn = Crc32cUsesHardware() ? Crc32cSse42 : Crc32cTable;
  return fn(data, size, crc);
}
#else
bool Crc32cUsesHardware() { return false; }
uint32_t Crc32c(const void* data, size_t size, uint32_t crc) { return Crc32cTable(data, size, crc); }
#endif

}  // namespace ts

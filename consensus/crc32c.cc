// CRC-32C, reflected polynomial 0x82F63B78: the SSE4.2 crc32 instruction
// where the CPU has it (chosen once, at the first call), else a table
// slicing by 8 bytes. Both give the same values (crc32c_test compares them).
//
// The instruction takes 3 cycles and can start one per cycle, so large
// buffers run as three streams over three adjacent blocks at once, joined
// by the CRC's linearity: the register after A then B is the register
// after A shifted over |B| zero bytes, xor the register over B from 0. A
// shift is a multiplication by x^(8|B|) modulo the polynomial.
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

// a * b modulo the polynomial, both reflected (bit 31 is x^0).
uint32_t MulModPoly(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (uint32_t m = 1u << 31; m != 0; m >>= 1) {
    if (a & m) product ^= b;
    b = (b & 1) ? (b >> 1) ^ kPoly : b >> 1;  // b * x
  }
  return product;
}

// x^(8 * bytes) modulo the polynomial: shifts a register over `bytes` zeros.
uint32_t ShiftOverZeros(size_t bytes) {
  uint32_t result = 1u << 31;  // x^0
  uint32_t square = 1u << 30;  // x^1, then x^2, x^4, ...
  for (uint64_t bits = uint64_t{bytes} * 8; bits != 0; bits >>= 1) {
    if (bits & 1) result = MulModPoly(result, square);
    square = MulModPoly(square, square);
  }
  return result;
}

// Three-stream block sizes, largest first, with the shifts over one and
// two blocks that join the streams. Joining costs two multiplications
// (about 200 cycles): below three blocks of 1 KiB it would cost more than
// the streams save.
struct Block {
  size_t bytes;
  uint32_t over_one;
  uint32_t over_two;
};
const std::array<Block, 2>& Blocks() {
  static const std::array<Block, 2> blocks = [] {
    std::array<Block, 2> b{};
    size_t sizes[] = {4096, 1024};
    for (size_t i = 0; i < b.size(); ++i) b[i] = {sizes[i], ShiftOverZeros(sizes[i]), ShiftOverZeros(2 * sizes[i])};
    return b;
  }();
  return blocks;
}

__attribute__((target("sse4.2"))) uint32_t Crc32cSse42(const void* data, size_t size, uint32_t crc) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t c = ~crc;
  for (const Block& b : Blocks()) {
    while (size >= 3 * b.bytes) {
      uint64_t c1 = 0;
      uint64_t c2 = 0;
      for (size_t i = 0; i < b.bytes; i += 8) {
        uint64_t w0, w1, w2;
        std::memcpy(&w0, p + i, 8);
        std::memcpy(&w1, p + b.bytes + i, 8);
        std::memcpy(&w2, p + 2 * b.bytes + i, 8);
        c = __builtin_ia32_crc32di(c, w0);
        c1 = __builtin_ia32_crc32di(c1, w1);
        c2 = __builtin_ia32_crc32di(c2, w2);
      }
      c = MulModPoly(b.over_two, static_cast<uint32_t>(c)) ^ MulModPoly(b.over_one, static_cast<uint32_t>(c1)) ^
          static_cast<uint32_t>(c2);
      p += 3 * b.bytes;
      size -= 3 * b.bytes;
    }
  }
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

// CRC-32C (Castagnoli), the checksum of every frame (rpc/) and every stored
// record (storage/). Pure code so both layers share one implementation; no
// Debian package ships a maintained CRC-32C library for C++.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ts {

// Extends `crc` (0 for a fresh checksum) over `data`.
uint32_t Crc32c(const void* data, size_t size, uint32_t crc = 0);
inline uint32_t Crc32c(std::string_view s, uint32_t crc = 0) { return Crc32c(s.data(), s.size(), crc); }

// The portable table form, and whether Crc32c uses the CPU's instruction
// instead (x86-64 with SSE4.2); for tests and benchmarks.
uint32_t Crc32cTable(const void* data, size_t size, uint32_t crc = 0);
bool Crc32cUsesHardware();

}  // namespace ts

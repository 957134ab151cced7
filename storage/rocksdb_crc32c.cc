#include "storage/rocksdb_crc32c.h"

#include <atomic>

#include "consensus/crc32c.h"

namespace {
// Whether RocksDB has called the wrapper (relaxed: a report, not a fence).
std::atomic<bool> called{false};
}  // namespace

// rocksdb::crc32c::Extend(uint32_t init_crc, const char* data, size_t n)
// (util/crc32c.h, not installed): the CRC-32C of the bytes whose CRC-32C is
// init_crc, followed by data[0, n). The linker sends every call of it to
// __wrap_ and gives the original the name __real_.
extern "C" uint32_t __real__ZN7rocksdb6crc32c6ExtendEjPKcm(uint32_t init_crc, const char* data, size_t n);
extern "C" uint32_t __wrap__ZN7rocksdb6crc32c6ExtendEjPKcm(uint32_t init_crc, const char* data, size_t n) {
  if (!called.load(std::memory_order_relaxed)) called.store(true, std::memory_order_relaxed);
  return ts::Crc32c(data, n, init_crc);
}

namespace ts::storage {

std::string RocksDbCrc32c() {
  if (!called.load(std::memory_order_relaxed)) return "not used yet";
  return Crc32cUsesHardware() ? "tsnode's, with the CPU's instruction" : "tsnode's, table-driven";
}

uint32_t LibRocksDbCrc32c(uint32_t init_crc, const char* data, size_t n) {
  return __real__ZN7rocksdb6crc32c6ExtendEjPKcm(init_crc, data, n);
}

}  // namespace ts::storage

// RocksDB checksums every WAL record (and its MANIFEST) with CRC-32C, through
// rocksdb::crc32c::Extend. Debian builds librocksdb for any x86-64, so that
// function always takes its table-driven path: 5% of all CPU of a 3-node
// cluster under 4 KiB puts. Every program linking ts_storage is linked with
// `--wrap` on that symbol (storage/CMakeLists.txt): RocksDB's calls reach
// rocksdb_crc32c.cc, which answers with ts::Crc32c (the CPU's instruction
// where it has one). The checksums are the same numbers either way
// (storage_test compares the two over every length and alignment), so the
// files stay readable by any RocksDB; only the speed differs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ts::storage {

// Which CRC-32C the running process's RocksDB has used: "tsnode's, with
// the CPU's instruction", "tsnode's, table-driven", or "not used yet" while
// RocksDB has checksummed nothing (opening a store always does).
std::string RocksDbCrc32c();

// librocksdb's own function, which the wrap hides from everything else; for
// the tests that compare the two.
uint32_t LibRocksDbCrc32c(uint32_t init_crc, const char* data, size_t n);

}  // namespace ts::storage

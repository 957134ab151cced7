// Damage done to files on purpose, for the tests of damaged stores (unit and
// real-process alike).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace ts::testing {

// Inverts `n` bytes in the middle of `path`.
inline void FlipMiddle(const std::string& path, size_t n) {
  const auto size = std::filesystem::file_size(path);
  ASSERT_GT(size, 4 * n) << path;
  const auto at = static_cast<std::streamoff>(size / 2);
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(f.is_open()) << path;
  std::string bytes(n, '\0');
  f.seekg(at);
  ASSERT_TRUE(f.read(bytes.data(), static_cast<std::streamsize>(n))) << path;
  for (char& c : bytes) c = static_cast<char>(~c);
  f.seekp(at);
  ASSERT_TRUE(f.write(bytes.data(), static_cast<std::streamsize>(n))) << path;
  f.close();
  ASSERT_FALSE(f.fail()) << path;
}

}  // namespace ts::testing

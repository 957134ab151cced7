// splitmix64's finalizer: a 64-bit value whose every bit depends on every
// input bit. The generators of the core and the station step a seed through
// it, and the key-value store's entry hash ends with it.
#pragma once

#include <cstdint>

namespace ts {

inline uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace ts

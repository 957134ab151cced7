// A linearizability checker for key-value histories: Wing & Gong's search
// with memoisation of (linearized set, state), split per key (each operation
// touches one key, so a history is linearizable iff each key's is), as
// Porcupine does. Operations whose answer never came (a timeout, a crashed
// client) have no return time: they may have taken effect at any point after
// their call, or never.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ts::sim {

struct KvOperation {
  enum class Kind : uint8_t { kPut, kGet, kCas, kDelete } kind = Kind::kGet;
  std::string key;
  std::string value;             // put/cas: the new value
  std::string expected;          // cas: the value compared with
  bool expected_absent = false;  // cas: "key must not exist"
  // The answer, if one came.
  bool ok = false;                     // put/cas/delete succeeded; get found the key
  std::string result;                  // get: the value read
  uint64_t call_ns = 0;
  std::optional<uint64_t> return_ns;   // nullopt: outcome unknown
  uint64_t client = 0;                 // for messages only
};

struct LinearizabilityResult {
  bool ok = true;
  std::string key;          // the key whose history is not linearizable
  std::string explanation;  // what could not be placed
  uint64_t states_explored = 0;
};

// Checks the whole history. `max_states` bounds the search per key; past it
// the result is ok=false with an explanation saying the search was cut
// (never a silent pass).
LinearizabilityResult CheckLinearizable(const std::vector<KvOperation>& history, uint64_t max_states = 50'000'000);

}  // namespace ts::sim

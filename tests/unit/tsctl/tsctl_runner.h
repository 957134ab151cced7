// Runs tsctl in-process, as its tests do: arguments in, exit code and both
// streams out.
#pragma once

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "node/tsctl/tsctl_cli.h"

namespace ts::tsctl::testing {

// Whether `s` contains `part` (tsctl's output, in the tests' checks).
inline bool Has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

struct Result {
  int code = -1;
  std::string out;
  std::string err;
};

inline Result Tsctl(std::vector<std::string> args) {
  args.insert(args.begin(), "tsctl");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  Result r;
  r.code = RunTsctl(static_cast<int>(argv.size()), argv.data(), out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

inline size_t Lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

}  // namespace ts::tsctl::testing

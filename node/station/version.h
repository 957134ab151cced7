// Software versions: the semver this build announces (fixed at build time by
// CMake's TS_SOFTWARE_VERSION; tsnode --software-version overrides it so one
// binary can play two versions in a test cluster) and semver parsing/order.
#pragma once

#include <compare>
#include <optional>
#include <string>
#include <string_view>

namespace ts::station {

inline constexpr const char* kSoftwareVersion = TS_SOFTWARE_VERSION_STRING;

struct Semver {
  unsigned major = 0;
  unsigned minor = 0;
  unsigned patch = 0;

  auto operator<=>(const Semver&) const = default;
  std::string ToString() const;
  // "X.Y.Z", digits only; anything else is nullopt.
  static std::optional<Semver> Parse(std::string_view text);
};

inline bool IsSemver(std::string_view text) { return Semver::Parse(text).has_value(); }

}  // namespace ts::station

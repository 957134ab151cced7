// tsnode's logger: its level, a text or JSON format (one object a line:
// ts, level, node, msg), and stderr or a file with rotation.
#pragma once

#include <cstddef>
#include <string>

#include "consensus/status.h"

namespace ts::tsnode {

struct LogOptions {
  std::string level = "info";   // trace, debug, info, warn, error, critical, off
  std::string format = "text";  // text or json
  std::string file;             // empty: stderr
  size_t file_max_bytes = 100 << 20;
  size_t file_count = 5;        // rotated files kept besides the current one
};

// The level names --log-level accepts.
inline const char* const kLogLevels[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};

// Makes the default logger "node ID: ..." (text) or {"node": ID, ...}
// (json). IoError if the log file cannot be opened.
Status SetUpLogging(unsigned node_id, const LogOptions& o);

// `s` as the inside of a JSON string.
std::string JsonEscape(std::string_view s);

}  // namespace ts::tsnode

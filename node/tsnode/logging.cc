#include "node/tsnode/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>

namespace ts::tsnode {

std::string JsonEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);  // UTF-8 passes through
        }
    }
  }
  return out;
}

namespace {

// %* in a pattern: the message, escaped for a JSON string.
class JsonMessage : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    std::string escaped = JsonEscape(std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(escaped.data(), escaped.data() + escaped.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<JsonMessage>(); }
};

}  // namespace

Status SetUpLogging(unsigned node_id, const LogOptions& o) {
  std::shared_ptr<spdlog::logger> logger;
  try {
    if (o.file.empty()) {
      logger = spdlog::stderr_color_mt("tsnode");
    } else {
      logger = spdlog::rotating_logger_mt("tsnode", o.file, o.file_max_bytes, o.file_count);
    }
  } catch (const spdlog::spdlog_ex& e) {
    return Status::IoError(std::string("cannot open the log file: ") + e.what());
  }
  auto formatter = std::make_unique<spdlog::pattern_formatter>(
      o.format == "json" ? spdlog::pattern_time_type::utc : spdlog::pattern_time_type::local);
  if (o.format == "json") {
    formatter->add_flag<JsonMessage>('*').set_pattern(
        "{\"ts\":\"%Y-%m-%dT%H:%M:%S.%eZ\",\"level\":\"%l\",\"node\":" + std::to_string(node_id) + ",\"msg\":\"%*\"}");
  } else {
    formatter->set_pattern("%Y-%m-%dT%H:%M:%S.%e [%^%l%$] node " + std::to_string(node_id) + ": %v");
  }
  logger->set_formatter(std::move(formatter));
  logger->set_level(spdlog::level::from_str(o.level));
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(logger);
  return Status::Ok();
}

}  // namespace ts::tsnode

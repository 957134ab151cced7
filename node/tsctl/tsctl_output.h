// Where one tsctl command's results go: text or one JSON object on `out`,
// and on failure exactly one line on `err` (with --json, also
// {"ok":false,"error":...} on `out`). Shared by the commands of every file.
#pragma once

#include <cassert>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "node/tsctl/tsctl_cli.h"
#include "node/tsctl/tsctl_format.h"

namespace ts::tsctl {

class Output {
 public:
  Output(bool json, std::ostream& out, std::ostream& err) : json_(json), out_(out), err_(err) {}

  bool json() const { return json_; }
  std::ostream& out() { return out_; }

  // Writes the failure and returns `code` (never kExitOk).
  int Fail(int code, const std::string& message, nlohmann::json extra = nlohmann::json::object()) {
    assert(code != kExitOk);
    std::string line = OneLine(message);
    if (json_) {
      extra["ok"] = false;
      extra["error"] = line;
      out_ << DumpJson(extra) << '\n';
    }
    err_ << line << '\n';
    return code;
  }

  // The result: `j` with --json, else `text`.
  void Print(const nlohmann::json& j, const std::string& text) {
    if (json_)
      out_ << DumpJson(j) << '\n';
    else
      out_ << text << '\n';
  }

  // A result that is also a failure: `j` (with "ok": false) or `text` on
  // stdout, as Print does, and the one-line `summary` on stderr; returns
  // `code`. For commands whose every row is printed, failed ones included.
  int PrintFailed(int code, const nlohmann::json& j, const std::string& text, const std::string& summary) {
    assert(code != kExitOk);
    Print(j, text);
    err_ << OneLine(summary) << '\n';
    return code;
  }

  // A line on `err` for a person, after a result that succeeded (what to
  // do next), in text mode only.
  void Note(const std::string& line) {
    if (!json_) err_ << OneLine(line) << '\n';
  }

  // A progress line of a long command, in text mode only (the JSON object
  // comes once, at the end).
  void Progress(const std::string& line) {
    if (!json_) out_ << line << '\n' << std::flush;
  }

 private:
  bool json_;
  std::ostream& out_;
  std::ostream& err_;
};

}  // namespace ts::tsctl

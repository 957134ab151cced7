// Runs the project's programs as child processes for tests of their command
// lines: one-shot commands with stdin, output and a deadline (RunCommand),
// and long-running ones (ChildProcess). Children die with the test
// (PR_SET_PDEATHSIG) and are killed and reaped by the destructor.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace ts::integration {

struct CommandResult {
  int code = -1;           // exit code; -1 if killed or timed out
  bool timed_out = false;  // killed at the deadline
  std::string out;
  std::string err;
};

// argv[0] is the program's path. `env` entries ("NAME=value") are added to
// the test's environment. The deadline is scaled (TimingScale).
CommandResult RunCommand(const std::vector<std::string>& argv, const std::string& stdin_data = "",
                         std::chrono::milliseconds timeout = std::chrono::milliseconds(10000),
                         const std::vector<std::string>& env = {});

class ChildProcess {
 public:
  // Starts argv with stdout and stderr appended to `log_path`.
  ChildProcess(const std::vector<std::string>& argv, const std::string& log_path,
               const std::vector<std::string>& env = {});
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Sends SIGTERM and waits (SIGKILL after 10 s); returns the exit code
  // (-1 if a signal ended it). Idempotent.
  int Stop();
  // Waits up to `timeout` (scaled) for the child to exit on its own; its
  // exit code, or nullopt-like -2 if it still runs.
  int WaitExit(std::chrono::milliseconds timeout);
  std::string Log() const;

 private:
  pid_t pid_ = -1;
  int code_ = -2;
  std::string log_path_;
};

}  // namespace ts::integration

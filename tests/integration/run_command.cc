#include "tests/integration/run_command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tests/integration/cluster_harness.h"

namespace ts::integration {
namespace {

// Prepared before fork: the child only calls async-signal-safe functions.
struct ExecArgs {
  std::vector<std::string> strings;
  std::vector<char*> argv;
  std::vector<std::string> env_strings;
  std::vector<char*> envp;
};

ExecArgs Prepare(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  ExecArgs a;
  a.strings = argv;
  for (std::string& s : a.strings) a.argv.push_back(s.data());
  a.argv.push_back(nullptr);
  for (char** e = environ; *e != nullptr; ++e) a.env_strings.emplace_back(*e);
  for (const std::string& e : env) a.env_strings.push_back(e);
  for (std::string& s : a.env_strings) a.envp.push_back(s.data());
  a.envp.push_back(nullptr);
  return a;
}

[[noreturn]] void Exec(ExecArgs& a) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  execve(a.argv[0], a.argv.data(), a.envp.data());
  _exit(127);
}

int ExitCode(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : -1; }

}  // namespace

CommandResult RunCommand(const std::vector<std::string>& argv, const std::string& stdin_data,
                         std::chrono::milliseconds timeout, const std::vector<std::string>& env) {
  ExecArgs a = Prepare(argv, env);
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe failed");
  }
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    Exec(a);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  // Feed stdin from a thread, so a child that writes before it reads cannot
  // deadlock against us.
  std::thread feeder([fd = in[1], &stdin_data] {
    size_t off = 0;
    while (off < stdin_data.size()) {
      ssize_t n = write(fd, stdin_data.data() + off, stdin_data.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    close(fd);
  });
  CommandResult r;
  auto deadline = std::chrono::steady_clock::now() + Scaled(timeout);
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open_fds = 2;
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    if (poll(fds, 2, static_cast<int>(left.count())) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      char buf[65536];
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  feeder.join();
  r.code = r.timed_out ? -1 : ExitCode(status);
  return r;
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::string& log_path,
                           const std::vector<std::string>& env)
    : log_path_(log_path) {
  ExecArgs a = Prepare(argv, env);
  int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot open " + log_path);
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    int null = open("/dev/null", O_RDONLY);
    dup2(null, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    Exec(a);
  }
  close(fd);
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && code_ == -2) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

int ChildProcess::WaitExit(std::chrono::milliseconds timeout) {
  if (code_ != -2) return code_;
  auto deadline = std::chrono::steady_clock::now() + Scaled(timeout);
  do {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) return code_ = ExitCode(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  } while (std::chrono::steady_clock::now() < deadline);
  return -2;
}

int ChildProcess::Stop() {
  if (code_ != -2) return code_;
  kill(pid_, SIGTERM);
  if (WaitExit(std::chrono::milliseconds(10000)) == -2) {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    code_ = -1;
  }
  return code_;
}

std::string ChildProcess::Log() const {
  std::ifstream f(log_path_);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace ts::integration

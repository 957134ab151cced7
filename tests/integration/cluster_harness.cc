// ProcessCluster; see cluster_harness.h.
#include "tests/integration/cluster_harness.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#ifndef TS_TSNODE_PATH
#error "TS_TSNODE_PATH must name the tsnode binary"
#endif

namespace ts::integration {

double TimingScale() {
  const char* s = std::getenv("TS_TEST_TIMING_SCALE");
  double v = s ? std::atof(s) : 1.0;
  return v >= 1.0 ? v : 1.0;
}

std::chrono::milliseconds Scaled(std::chrono::milliseconds ms) {
  return std::chrono::milliseconds(static_cast<int64_t>(static_cast<double>(ms.count()) * TimingScale()));
}

bool WaitFor(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + Scaled(timeout);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling interval, not a wait for an outcome
  }
  return pred();
}

// Ports come from below Linux's ephemeral range (32768 on): a port the
// kernel picks for bind(0) or as an outgoing connection's source can be
// taken by any process between our pick and the node's bind, while one of
// these is taken only by another test picking the same random port. A port
// is handed out once per process (a node of an earlier cluster may not have
// bound its port yet), and must be bindable now.
std::unique_ptr<ProcessCluster> StartWithHttpPorts(size_t n, std::vector<uint16_t>* http_ports) {
  auto c = std::make_unique<ProcessCluster>(n, std::vector<std::string>{}, std::vector<std::vector<std::string>>{},
                                            /*start_now=*/false);
  *http_ports = FreePorts(n);
  for (size_t i = 0; i < n; ++i) c->Start(i, {"--http-addr", "127.0.0.1:" + std::to_string((*http_ports)[i])});
  return c;
}

std::vector<uint16_t> FreePorts(size_t n) {
  static std::mutex mu;
  static std::set<uint16_t> handed_out;
  static std::mt19937 rng(static_cast<uint32_t>(getpid()) ^
                          static_cast<uint32_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
  std::lock_guard<std::mutex> lock(mu);
  std::vector<uint16_t> ports;
  for (int tries = 0; ports.size() < n; ++tries) {
    if (tries > 10000) throw std::runtime_error("cannot pick a free port in 10000-32767");
    auto port = static_cast<uint16_t>(std::uniform_int_distribution<int>(10000, 32767)(rng));
    if (handed_out.count(port)) continue;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) throw std::runtime_error("cannot pick a free port: no socket");
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    const bool free = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    close(fd);
    if (!free) continue;
    handed_out.insert(port);
    ports.push_back(port);
  }
  return ports;
}

ProcessCluster::ProcessCluster(size_t n, std::vector<std::string> extra_args,
                               std::vector<std::vector<std::string>> per_node_args, bool start_now)
    : extra_args_(std::move(extra_args)) {
  // TS_TSNODE_ARGS (e.g. "--log-level debug") adds flags to every node, to
  // look into a failure.
  if (const char* env = std::getenv("TS_TSNODE_ARGS")) {
    std::istringstream words(env);
    for (std::string w; words >> w;) extra_args_.push_back(w);
  }
  char tmpl[] = "/tmp/ts-it-XXXXXX";
  if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  std::vector<uint16_t> ports = FreePorts(2 * n);
  std::string peers;
  for (size_t i = 0; i < n; ++i) {
    peers += (i ? "," : "") + std::to_string(i + 1) + "=127.0.0.1:" + std::to_string(ports[i]);
  }
  for (size_t i = 0; i < n; ++i) {
    NodeProc p;
    p.id = static_cast<consensus::NodeId>(i + 1);
    p.peer = rpc::HostPort{"127.0.0.1", ports[i]};
    p.client = rpc::HostPort{"127.0.0.1", ports[n + i]};
    p.data_dir = dir_ + "/node" + std::to_string(i + 1);
    p.log_path = dir_ + "/node" + std::to_string(i + 1) + ".log";
    auto ms = [](int v) { return std::to_string(Scaled(std::chrono::milliseconds(v)).count()); };
    p.args = {"--id",           std::to_string(p.id), "--peers",      peers,
              "--client-addr",  p.client.ToString(), "--data-dir",   p.data_dir,
              "--cluster-id",   "it",                "--heartbeat-ms", ms(20),
              "--lease-ms",     ms(100),             "--drift-ms",   ms(15),
              "--election-jitter-ms", ms(50)};
    if (i < per_node_args.size()) p.args.insert(p.args.end(), per_node_args[i].begin(), per_node_args[i].end());
    nodes_.push_back(std::move(p));
  }
  if (start_now) {
    for (size_t i = 0; i < n; ++i) Start(i);
  }
}

void ProcessCluster::RestartAs(size_t i, const std::string& version) {
  std::vector<std::string>& a = nodes_[i].args;
  for (size_t k = 0; k + 1 < a.size(); ++k) {
    if (a[k] == "--software-version") {
      a.erase(a.begin() + static_cast<std::ptrdiff_t>(k), a.begin() + static_cast<std::ptrdiff_t>(k) + 2);
      break;
    }
  }
  a.push_back("--software-version");
  a.push_back(version);
  Restart(i);
}

size_t ProcessCluster::AddSpare() {
  size_t i = nodes_.size();
  std::vector<uint16_t> ports = FreePorts(2);
  NodeProc p = nodes_.back();  // same flags but its own id, ports and dir
  p.id = static_cast<consensus::NodeId>(i + 1);
  p.peer = rpc::HostPort{"127.0.0.1", ports[0]};
  p.client = rpc::HostPort{"127.0.0.1", ports[1]};
  p.data_dir = dir_ + "/node" + std::to_string(i + 1);
  p.log_path = dir_ + "/node" + std::to_string(i + 1) + ".log";
  p.pid = -1;
  p.paused = false;
  p.started_once = true;  // never a bootstrap member
  std::string peers;
  for (const NodeProc& q : nodes_) peers += std::to_string(q.id) + "=" + q.peer.ToString() + ",";
  peers += std::to_string(p.id) + "=" + p.peer.ToString();
  for (size_t k = 0; k + 1 < p.args.size(); ++k) {
    if (p.args[k] == "--id") p.args[k + 1] = std::to_string(p.id);
    if (p.args[k] == "--peers") p.args[k + 1] = peers;
    if (p.args[k] == "--client-addr") p.args[k + 1] = p.client.ToString();
    if (p.args[k] == "--data-dir") p.args[k + 1] = p.data_dir;
  }
  nodes_.push_back(std::move(p));
  return i;
}

ProcessCluster::~ProcessCluster() {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].pid > 0) Kill(i);
  }
  if (!std::getenv("TS_KEEP_LOGS")) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  } else {
    std::fprintf(stderr, "integration logs kept in %s\n", dir_.c_str());
  }
}

void ProcessCluster::Start(size_t i, std::vector<std::string> extra_args) {
  NodeProc& p = nodes_[i];
  std::vector<std::string> args = p.args;
  args.insert(args.end(), extra_args_.begin(), extra_args_.end());
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  if (!p.started_once) {
    args.insert(args.end(), {"--initial-cluster-state", "new"});
    p.started_once = true;
  }
  // Everything the child needs is prepared before fork: other threads (test
  // clients) may hold the allocator's lock, so the child only makes syscalls.
  std::string bin = p.binary.empty() ? std::string(TS_TSNODE_PATH) : p.binary;
  std::vector<char*> argv;
  argv.push_back(bin.data());
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    // If the test process dies (crash, ctest timeout) the node dies with it
    // instead of lingering on its ports.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    int fd = open(p.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    // The node must not inherit the test's sockets (a test's closed
    // connection would stay open in the child).
    close_range(3, ~0U, 0);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  p.pid = pid;
  p.paused = false;
}

void ProcessCluster::Kill(size_t i) {
  NodeProc& p = nodes_[i];
  if (p.pid <= 0) return;
  kill(p.pid, SIGKILL);
  waitpid(p.pid, nullptr, 0);
  p.pid = -1;
}

void ProcessCluster::WipeData(size_t i) {
  NodeProc& p = nodes_[i];
  EXPECT_LE(p.pid, 0) << "wiping the data of a running node";
  std::error_code ec;
  std::filesystem::remove_all(p.data_dir, ec);
  EXPECT_FALSE(ec) << "removing " << p.data_dir << ": " << ec.message();
}

void ProcessCluster::Stop(size_t i) {
  NodeProc& p = nodes_[i];
  if (p.pid <= 0) return;
  if (p.paused) kill(p.pid, SIGCONT);
  kill(p.pid, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(p.pid, nullptr, WNOHANG) == p.pid) {
      p.pid = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  Kill(i);
}

void ProcessCluster::Restart(size_t i, std::vector<std::string> extra_args) {
  Stop(i);
  Start(i, std::move(extra_args));
}

void ProcessCluster::Pause(size_t i) {
  kill(nodes_[i].pid, SIGSTOP);
  nodes_[i].paused = true;
}

void ProcessCluster::Resume(size_t i) {
  kill(nodes_[i].pid, SIGCONT);
  nodes_[i].paused = false;
}

bool ProcessCluster::Alive(size_t i) const {
  const NodeProc& p = nodes_[i];
  return p.pid > 0 && waitpid(p.pid, nullptr, WNOHANG) == 0;
}

std::vector<rpc::HostPort> ProcessCluster::endpoints() const {
  std::vector<rpc::HostPort> out;
  for (const NodeProc& p : nodes_) out.push_back(p.client);
  return out;
}

std::optional<rpc::NodeStatus> ProcessCluster::StatusOf(size_t i) const {
  rpc::BlockingClient c(client_tls_);
  if (!c.Connect(nodes_[i].client, std::chrono::milliseconds(300)).ok()) return std::nullopt;
  rpc::ClientRequest req;
  req.op = rpc::ClientOp::kStatus;
  auto r = c.Call(req, std::chrono::milliseconds(500));
  if (!r.ok()) return std::nullopt;
  return r->status;
}

std::optional<size_t> ProcessCluster::LeaderIndex() const {
  std::optional<size_t> leader;
  std::vector<rpc::NodeStatus> answers;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].pid <= 0 || nodes_[i].paused) continue;
    auto s = StatusOf(i);
    if (!s) continue;
    if (s->role == "leader" && s->lease_left_ms > 0) {
      if (leader) return std::nullopt;
      leader = i;
    }
    answers.push_back(*s);
  }
  if (!leader) return std::nullopt;
  // A node that knows no leader yet (just restarted or resumed) does not
  // disagree; one that names another node does.
  for (const auto& s : answers) {
    if (s.leader != consensus::kNoNode && s.leader != nodes_[*leader].id) return std::nullopt;
  }
  return leader;
}

bool ProcessCluster::WaitForLeader(std::chrono::milliseconds timeout) const {
  return WaitForLeaderIndex(timeout).has_value();
}

bool ProcessCluster::WaitForFormed(std::chrono::milliseconds timeout) const {
  return WaitFor([&] {
    if (!LeaderIndex()) return false;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (!Alive(i)) continue;
      auto s = StatusOf(i);
      if (!s || !s->voter) return false;
    }
    return true;
  }, timeout);
}

std::optional<size_t> ProcessCluster::WaitForLeaderIndex(std::chrono::milliseconds timeout) const {
  std::optional<size_t> leader;
  WaitFor([&] { return (leader = LeaderIndex()).has_value(); }, timeout);
  return leader;
}

bool ProcessCluster::WaitForConvergence(std::chrono::milliseconds timeout) const {
  return WaitFor(
      [&] {
        std::optional<rpc::NodeStatus> first;
        for (size_t i = 0; i < nodes_.size(); ++i) {
          if (nodes_[i].pid <= 0) continue;
          auto s = StatusOf(i);
          if (!s) return false;
          if (!first) first = s;
          else if (s->applied_slot != first->applied_slot || s->log_digest != first->log_digest) return false;
        }
        return first.has_value() && first->applied_slot == first->chosen_slot;
      },
      timeout);
}

std::optional<uint64_t> ProcessCluster::PeakVirtualBytes(size_t i) const {
  if (nodes_[i].pid <= 0) return std::nullopt;
  std::ifstream in("/proc/" + std::to_string(nodes_[i].pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmPeak:", 0) == 0) return std::stoull(line.substr(7)) * 1024;  // "VmPeak:  123 kB"
  }
  return std::nullopt;
}

client::ClientOptions ProcessCluster::ClientOptionsFor(std::chrono::milliseconds timeout) const {
  client::ClientOptions o;
  o.endpoints = endpoints();
  o.tls = client_tls_;
  o.timeout = Scaled(timeout);
  return o;
}

std::string ProcessCluster::LogText(size_t i) const {
  std::ifstream in(nodes_[i].log_path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string ProcessCluster::LogsOfAll() const {
  std::string all;
  for (size_t i = 0; i < nodes_.size(); ++i) all += LogText(i);
  return all;
}

std::string ProcessCluster::LogTail(size_t i, size_t lines) const {
  std::ifstream in(nodes_[i].log_path);
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) all.push_back(line);
  std::ostringstream out;
  for (size_t k = all.size() > lines ? all.size() - lines : 0; k < all.size(); ++k) out << all[k] << "\n";
  return out.str();
}

void ProcessCluster::DumpLogs() const {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    std::fprintf(stderr, "----- node %zu log (tail) -----\n%s", i + 1, LogTail(i).c_str());
  }
}

void BlockPeers(const ProcessCluster& c, size_t i, const std::string& peers) {
  using namespace std::chrono_literals;
  rpc::BlockingClient one;
  ASSERT_TRUE(one.Connect(c.client_addr(i), Scaled(2000ms)).ok());
  auto r = one.Call(Req(rpc::ClientOp::kFault, "block", peers), Scaled(2000ms));
  ASSERT_TRUE(r.ok() && r->code == rpc::ClientCode::kOk) << (r.ok() ? r->message : r.status().ToString());
}

}  // namespace ts::integration

// FakeNode: a client port on an ephemeral loopback port, answering with
// whatever the test scripts, on its own io_context thread. It lets client
// tests (leader hints, retries, tsctl output) run against real sockets and
// the real client protocol without a cluster.
#pragma once

#include <gtest/gtest.h>

#include <asio.hpp>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "rpc/client_protocol.h"
#include "rpc/transport.h"

namespace ts::client::testing {

class FakeNode {
 public:
  // Returns the answer to a request, or nullopt to never answer it (the
  // connection stays open, as a node that hangs).
  using Script = std::function<std::optional<rpc::ClientResponse>(const rpc::ClientRequest&)>;

  explicit FakeNode(Script script) : script_(std::move(script)) {
    auto on_request = [this](rpc::ClientRequest&& req, rpc::ClientServer::Responder respond) {
      OnRequest(std::move(req), std::move(respond));
    };
    server_ = std::make_unique<rpc::ClientServer>(io_, rpc::HostPort{"127.0.0.1", 0}, rpc::kDefaultFrameBytesMax,
                                                  on_request);
    Status s = server_->Start();
    EXPECT_TRUE(s.ok()) << s.ToString();
    port_ = server_->bound_port();
    EXPECT_NE(port_, 0);
    work_.emplace(asio::make_work_guard(io_));
    thread_ = std::thread([this] { io_.run(); });
  }

  ~FakeNode() {
    asio::post(io_, [this] {
      server_->Stop();
      silenced_.clear();
      work_.reset();
    });
    thread_.join();
    server_.reset();
  }

  rpc::HostPort addr() const { return {"127.0.0.1", port_}; }

  // Every request received so far, in arrival order.
  std::vector<rpc::ClientRequest> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  size_t request_count() const { return requests().size(); }
  size_t count(rpc::ClientOp op) const {
    size_t n = 0;
    for (const auto& r : requests()) n += r.op == op ? 1 : 0;
    return n;
  }

 private:
  // Runs on the io thread.
  void OnRequest(rpc::ClientRequest&& req, rpc::ClientServer::Responder respond) {
    std::optional<rpc::ClientResponse> answer;
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(req);
      answer = script_(req);
    }
    if (!answer) {
      silenced_.push_back(std::move(respond));  // kept so the connection stays open, unanswered
      return;
    }
    answer->id = req.id;
    respond(std::move(*answer));
  }

  asio::io_context io_;
  std::unique_ptr<rpc::ClientServer> server_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::thread thread_;
  uint16_t port_ = 0;
  mutable std::mutex mu_;
  Script script_;
  std::vector<rpc::ClientRequest> requests_;
  std::vector<rpc::ClientServer::Responder> silenced_;
};

// Answers built the way a node builds them.
inline rpc::ClientResponse Ok(uint64_t slot = 0) {
  rpc::ClientResponse r;
  r.slot = slot;
  return r;
}

inline rpc::ClientResponse Code(rpc::ClientCode code, std::string message, std::string hint = "") {
  rpc::ClientResponse r;
  r.code = code;
  r.message = std::move(message);
  r.leader_hint = std::move(hint);
  return r;
}

// A node that leads: answers status as leader (ballot round.1), and every
// other request with `ops`.
inline FakeNode::Script Leading(FakeNode::Script ops, uint64_t round = 1) {
  return [ops = std::move(ops), round](const rpc::ClientRequest& r) -> std::optional<rpc::ClientResponse> {
    if (r.op != rpc::ClientOp::kStatus) return ops(r);
    rpc::ClientResponse resp;
    resp.status.id = 1;
    resp.status.role = "leader";
    resp.status.ballot = consensus::Ballot{round, 1};
    return resp;
  };
}

// A follower of the node at `leader()` (called per request, so a test can
// move the leader): status names it, every other request is redirected.
inline FakeNode::Script Following(std::function<std::string()> leader) {
  return [leader = std::move(leader)](const rpc::ClientRequest& r) -> std::optional<rpc::ClientResponse> {
    rpc::ClientResponse resp;
    if (r.op == rpc::ClientOp::kStatus) {
      resp.status.id = 2;
      resp.status.role = "follower";
      resp.status.leader_client_addr = leader();
      return resp;
    }
    return Code(rpc::ClientCode::kNotLeader, "not the leader", leader());
  };
}

// A port on which nothing listens: bound once by the kernel's choice, then
// released, so a connect to it is refused.
inline uint16_t ClosedPort() {
  asio::io_context io;
  asio::ip::tcp::acceptor a(io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  uint16_t port = a.local_endpoint().port();
  a.close();
  return port;
}

}  // namespace ts::client::testing

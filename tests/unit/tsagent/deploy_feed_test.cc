// tsagent's DeployFeed (node/tsagent/deploy_feed.h) against a fake node on a
// real client port: a node of wire version 2 (1.2.0) cannot take the watch,
// so the feed says so once and polls; a node that streams deployment events
// has the feed collect the objects they name, and a watch it ends
// (compacted) makes the feed say so and ask for a full read, after which it
// watches again from that read.
#include <gtest/gtest.h>

#include <asio.hpp>
#include <mutex>
#include <thread>

#include "node/tsagent/deploy_feed.h"
#include "rpc/transport.h"

namespace ts::tsagent {
namespace {

using namespace std::chrono_literals;
using rpc::ClientCode;
using rpc::ClientOp;
using rpc::ClientResponse;

// A node on its own thread: every watch gets its first answer, a batch of
// two deployment events, then, if `compacted`, its end with kCompacted.
class FakeNode {
 public:
  FakeNode(uint8_t wire_version, bool compacted)
      : server_(io_, rpc::HostPort{"127.0.0.1", 0}, rpc::kDefaultFrameBytesMax,
                [this, compacted](rpc::ClientRequest&& req, rpc::ClientServer::Responder respond) {
                  ClientResponse r;
                  r.id = req.id;
                  if (req.op != ClientOp::kWatch) {
                    respond(std::move(r));
                    return;
                  }
                  {
                    std::lock_guard<std::mutex> lock(mu_);
                    watches_.push_back(req);
                  }
                  r.stream_more = true;
                  r.slot = req.from_slot - 1;
                  respond(ClientResponse(r));
                  r.slot = req.from_slot + 1;
                  for (const char* key : {"sched/a", "lrp/g"}) {
                    rpc::WatchEvent e;
                    e.kind = rpc::WatchEvent::Kind::kDeploy;
                    e.slot = req.from_slot + 1;
                    e.key = key;
                    r.events.push_back(e);
                  }
                  respond(ClientResponse(r));
                  if (!compacted) return;
                  ClientResponse end;
                  end.id = req.id;
                  end.code = ClientCode::kCompacted;
                  end.slot = req.from_slot + 100;
                  end.message = "compacted: test";
                  respond(std::move(end));
                }) {
    server_.SetIdentity(wire_version == 2 ? "1.2.0-test" : "1.3.0-test", wire_version);
    EXPECT_TRUE(server_.Start().ok());
    thread_ = std::thread([this] { io_.run(); });
  }
  ~FakeNode() {
    work_.reset();
    io_.stop();
    thread_.join();
  }
  client::ClientOptions Options() const {
    client::ClientOptions o;
    o.endpoints = {rpc::HostPort{"127.0.0.1", server_.bound_port()}};
    return o;
  }
  std::vector<rpc::ClientRequest> watches() {
    std::lock_guard<std::mutex> lock(mu_);
    return watches_;
  }

 private:
  asio::io_context io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_{asio::make_work_guard(io_)};
  rpc::ClientServer server_;
  std::thread thread_;
  std::mutex mu_;
  std::vector<rpc::ClientRequest> watches_;
};

bool Has(const std::vector<std::string>& lines, const std::string& part) {
  for (const std::string& l : lines) {
    if (l.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST(DeployFeed, ANodeOfVersion2HasNoWatch_TheFeedSaysSoOnceAndPolls) {
  FakeNode node(2, false);
  std::vector<std::string> log;
  DeployFeed feed(node.Options(), [&](const std::string& l) { log.push_back(l); });
  EXPECT_TRUE(feed.full_read_wanted()) << "a full read comes first";
  feed.ReadAllAt(5);
  ASSERT_TRUE(feed.watching());
  for (int i = 0; i < 50 && feed.watching(); ++i) feed.Poll(100ms);
  EXPECT_FALSE(feed.watching());
  EXPECT_TRUE(feed.full_read_wanted()) << "polling: a full read every period";
  EXPECT_TRUE(Has(log, "has no watch of deployment changes")) << ::testing::PrintToString(log);
  EXPECT_TRUE(node.watches().empty()) << "the 1.2.0 node never received the watch";
  feed.ReadAllAt(6);
  EXPECT_FALSE(feed.watching()) << "not asked again before kRetryUnsupported";
}

TEST(DeployFeed, EventsNameTheObjects_ACutWatchAsksForAFullReadThenWatchesFromIt) {
  FakeNode node(3, true);
  std::vector<std::string> log;
  DeployFeed feed(node.Options(), [&](const std::string& l) { log.push_back(l); });
  feed.ReadAllAt(10);
  std::set<std::string> changed;
  for (int i = 0; i < 50 && feed.watching(); ++i) {
    feed.Poll(100ms);
    for (const std::string& k : feed.TakeChanged()) changed.insert(k);
  }
  EXPECT_EQ(changed, (std::set<std::string>{"sched/a", "lrp/g"}));
  EXPECT_FALSE(feed.watching()) << "cut by compacted";
  EXPECT_TRUE(feed.full_read_wanted());
  EXPECT_TRUE(Has(log, "deployment watch cut: compacted")) << ::testing::PrintToString(log);
  feed.ReadAllAt(40);
  EXPECT_TRUE(feed.watching());
  for (int i = 0; i < 50 && node.watches().size() < 2; ++i) feed.Poll(100ms);
  auto w = node.watches();
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].from_slot, 11u);
  EXPECT_EQ(w[1].from_slot, 41u) << "watching again from the slot after the full read";
  EXPECT_TRUE(w[0].watch_deploy);
  EXPECT_EQ(w[0].key, "");
}

}  // namespace
}  // namespace ts::tsagent

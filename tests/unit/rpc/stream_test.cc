// Streams on the client port (a watch's answers, docs/design/watch.md): a
// request answered many times, each answer but the last with stream_more,
// as AsyncClient and BlockingClient receive them; a stream whose client
// does not read is cut with a final answer naming the slot to resume from,
// and the server's queue stays bounded; a node of wire version 2 never
// receives a watch, and its deployment answers are marked serializable.
#include <gtest/gtest.h>

#include <asio.hpp>
#include <atomic>
#include <thread>

#include "rpc/client_connection.h"
#include "rpc/codec.h"
#include "rpc/transport.h"
#include "tests/unit/rpc/rpc_test_util.h"

namespace ts::rpc {
namespace {

using testing::RawClient;
using testing::RunUntil;

ClientResponse Batch(uint64_t id, uint64_t slot, size_t value_bytes = 8) {
  ClientResponse r;
  r.id = id;
  r.stream_more = true;
  r.slot = slot;
  WatchEvent e;
  e.slot = slot;
  e.key = "k";
  e.value = std::string(value_bytes, 'v');
  r.events.push_back(e);
  return r;
}

// A server that holds each watch's responder, for the test to stream on.
struct StreamServer {
  StreamServer(asio::io_context& io, ClientLimits limits = {})
      : server(io, HostPort{"127.0.0.1", 0}, kDefaultFrameBytesMax,
               [this](ClientRequest&& req, ClientServer::Responder respond) {
                 if (req.op == ClientOp::kWatch) {
                   watch_id = req.id;
                   connection = req.connection;
                   stream = std::move(respond);
                   if (answer_at_once) stream(Batch(watch_id, 0));
                   return;
                 }
                 ClientResponse r;
                 r.id = req.id;
                 respond(std::move(r));
               },
               limits) {
    EXPECT_TRUE(server.Start().ok());
  }
  ClientServer server;
  ClientServer::Responder stream;
  bool answer_at_once = false;  // the watch's first answer as it arrives
  uint64_t watch_id = 0;
  uint64_t connection = 0;
};

ClientRequest Watch() {
  ClientRequest w;
  w.op = ClientOp::kWatch;
  w.key = "k";
  return w;
}

TEST(ClientStream, AsyncClient_GetsEveryAnswerUntilTheLast) {
  asio::io_context io;
  StreamServer s(io);
  AsyncClient c(io);
  Status connected = testing::ConnectAndWait(io, c, s.server.bound_port());
  ASSERT_TRUE(connected.ok()) << connected.ToString();
  std::vector<StatusOr<ClientResponse>> got;
  std::vector<int> order;  // the callback's own count, kept across answers
  uint64_t id = c.Send(Watch(), [&, n = 0](StatusOr<ClientResponse> r) mutable {
    order.push_back(++n);
    got.push_back(std::move(r));
  });
  ASSERT_NE(id, 0u);
  ASSERT_TRUE(RunUntil(io, [&] { return static_cast<bool>(s.stream); }));
  EXPECT_EQ(s.watch_id, id);
  EXPECT_NE(s.connection, 0u) << "the server numbers the connection";
  for (uint64_t slot = 1; slot <= 3; ++slot) EXPECT_TRUE(s.stream(Batch(s.watch_id, slot)));
  ClientResponse end;
  end.id = s.watch_id;
  end.message = "cancelled";
  EXPECT_TRUE(s.stream(std::move(end)));
  ASSERT_TRUE(RunUntil(io, [&] { return got.size() == 4; }));
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(got[i].ok());
    EXPECT_TRUE(got[i]->stream_more);
    EXPECT_EQ(got[i]->events.at(0).slot, i + 1);
  }
  EXPECT_FALSE(got[3]->stream_more);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4})) << "one callback, its state kept across the answers";
  // After the last answer, nothing more reaches the callback.
  EXPECT_TRUE(s.stream(Batch(s.watch_id, 9)));
  ClientRequest other;
  other.op = ClientOp::kGet;
  bool answered = false;
  c.Send(other, [&](StatusOr<ClientResponse>) { answered = true; });
  ASSERT_TRUE(RunUntil(io, [&] { return answered; }));
  EXPECT_EQ(got.size(), 4u);
}

TEST(ClientStream, BlockingClient_StartStreamThenNext_TimeoutKeepsTheStream) {
  asio::io_context io;
  StreamServer s(io);
  s.answer_at_once = true;
  std::atomic<bool> done{false};
  std::thread server([&] {
    while (!done) testing::RunFor(io, std::chrono::milliseconds(5));
  });
  BlockingClient c;
  ASSERT_TRUE(c.Connect({"127.0.0.1", s.server.bound_port()}, std::chrono::milliseconds(2000)).ok());
  auto first = c.StartStream(Watch(), std::chrono::milliseconds(2000));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(first->stream_more);
  EXPECT_NE(c.stream_id(), 0u);
  auto none = c.NextInStream(std::chrono::milliseconds(50));
  EXPECT_EQ(none.status().code(), Status::Code::kTimeout);
  EXPECT_NE(c.stream_id(), 0u) << "a timeout leaves the stream open";
  asio::post(io, [&] {
    ClientResponse end;
    end.id = s.watch_id;
    end.code = ClientCode::kCompacted;
    s.stream(std::move(end));
  });
  auto last = c.NextInStream(std::chrono::milliseconds(2000));
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->code, ClientCode::kCompacted);
  EXPECT_EQ(c.stream_id(), 0u);
  EXPECT_EQ(c.NextInStream(std::chrono::milliseconds(10)).status().code(), Status::Code::kFailedPrecondition);
  c.Close();
  done = true;
  server.join();
}

TEST(ClientStream, AClientThatDoesNotRead_IsCutWithTheSlotToResumeFrom) {
  asio::io_context io;
  ClientLimits limits;
  limits.stream_buffer_bytes = 256 << 10;
  StreamServer s(io, limits);
  RawClient raw(io);
  raw.Connect(s.server.bound_port(), /*read=*/false);
  ClientRequest w = Watch();
  w.id = 1;
  raw.Write(EncodeFrame(FrameType::kClientRequest, EncodeClientRequest(w, 3), 3));
  ASSERT_TRUE(RunUntil(io, [&] { return static_cast<bool>(s.stream); }));
  // 64 KiB answers until the server refuses one: the socket's buffers fill,
  // then the connection's queue up to the bound.
  uint64_t slot = 0;
  bool cut = false;
  while (!cut && slot < 10000) {
    cut = !s.stream(Batch(1, ++slot, 64 << 10));
    testing::RunFor(io, std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(cut) << "a stream nobody reads was never cut";
  EXPECT_GT(slot, 4u);
  // What the client finds once it reads: the answers queued, then the cut.
  raw.StartReading();
  FrameType type;
  std::string payload;
  std::optional<ClientResponse> last;
  while (raw.ReadFrame(&type, &payload)) {
    ClientResponse r;
    ASSERT_TRUE(DecodeClientResponse(payload, &r, 3).ok());
    if (!r.stream_more) {
      last = r;
      break;
    }
  }
  ASSERT_TRUE(last);
  EXPECT_EQ(last->code, ClientCode::kBusy);
  EXPECT_EQ(last->slot, slot) << "resume from the first slot not queued";
  EXPECT_NE(last->message.find("resume from slot " + std::to_string(slot)), std::string::npos) << last->message;
  EXPECT_FALSE(raw.closed()) << "the connection stays: only the stream ends";
}

TEST(ClientStream, ANodeOfVersion2_AWatchIsRefusedBeforeSending) {
  asio::io_context io;
  StreamServer s(io);
  s.server.SetIdentity("1.2.0-test", 2);
  AsyncClient c(io);
  Status connected = testing::ConnectAndWait(io, c, s.server.bound_port());
  ASSERT_TRUE(connected.ok()) << connected.ToString();
  ASSERT_EQ(c.wire_version(), 2);
  std::optional<StatusOr<ClientResponse>> r;
  EXPECT_EQ(c.Send(Watch(), [&](StatusOr<ClientResponse> x) { r = std::move(x); }), 0u);
  ASSERT_TRUE(r.has_value()) << "answered at once, never sent";
  ASSERT_TRUE(r->ok());
  EXPECT_EQ((*r)->code, ClientCode::kUnsupported);
  EXPECT_NE((*r)->message.find("watch needs wire version 3 (1.3.0 or later)"), std::string::npos) << (*r)->message;
  EXPECT_FALSE(s.stream) << "the node never saw it";
  EXPECT_GE(MinWireVersionOf(ClientOp::kWatchCancel), 3);
}

// A 1.2.0 node answers a deployment query from its own applied state,
// whatever the request asked (it cannot receive the serializable flag): the
// client marks that answer serializable, so it never passes for a
// linearizable one. A node of wire version 3 says for itself.
TEST(ClientStream, ADeploymentQueryAnsweredByANodeOfVersion2_IsMarkedSerializable) {
  for (uint8_t version : {2, 3}) {
    asio::io_context io;
    StreamServer s(io);
    s.server.SetIdentity(version == 2 ? "1.2.0-test" : "1.3.0-test", version);
    AsyncClient c(io);
    Status connected = testing::ConnectAndWait(io, c, s.server.bound_port());
    ASSERT_TRUE(connected.ok()) << connected.ToString();
    ASSERT_EQ(c.wire_version(), version);
    ClientRequest q;
    q.op = ClientOp::kDeployQuery;
    q.key = "sched/";
    std::optional<StatusOr<ClientResponse>> r;
    ASSERT_NE(c.Send(q, [&](StatusOr<ClientResponse> x) { r = std::move(x); }), 0u);
    ASSERT_TRUE(RunUntil(io, [&] { return r.has_value(); }));
    ASSERT_TRUE(r->ok());
    EXPECT_EQ((*r)->range_flags & kRangeSerializable, version == 2 ? kRangeSerializable : 0)
        << "wire version " << int(version);
  }
}

TEST(ClientStream, WatchFieldsTravelInVersion3Only) {
  ClientRequest w = Watch();
  w.watch_prefix = true;
  w.watch_id = 9;
  w.watch_deploy = true;
  ClientRequest back;
  ASSERT_TRUE(DecodeClientRequest(EncodeClientRequest(w, 3), &back, 3).ok());
  EXPECT_TRUE(back.watch_prefix);
  EXPECT_TRUE(back.watch_deploy);
  EXPECT_EQ(back.watch_id, 9u);
  EXPECT_EQ(back.connection, 0u) << "the connection's number never travels";
  ClientResponse r = Batch(4, 17);
  r.events[0].kind = WatchEvent::Kind::kDelete;
  ClientResponse got;
  ASSERT_TRUE(DecodeClientResponse(EncodeClientResponse(r, 3), &got, 3).ok());
  EXPECT_TRUE(got.stream_more);
  EXPECT_EQ(got.events, r.events);
  ClientResponse old;
  ASSERT_TRUE(DecodeClientResponse(EncodeClientResponse(r, 2), &old, 2).ok());
  EXPECT_FALSE(old.stream_more) << "a 1.2.0 reader never sees a stream";
  EXPECT_TRUE(old.events.empty());
  ClientResponse compacted;
  compacted.code = ClientCode::kCompacted;
  EXPECT_TRUE(DecodeClientResponse(EncodeClientResponse(compacted, 3), &got, 3).ok());
  EXPECT_EQ(DecodeClientResponse(EncodeClientResponse(compacted, 2), &got, 2).code(), Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace ts::rpc

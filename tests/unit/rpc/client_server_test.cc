// ClientServer with BlockingClient and AsyncClient on loopback: pipelined
// requests matched by id, timeouts, connection loss, hostile bytes on the
// client port, and a client that stops reading its responses.
#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "rpc/client_connection.h"
#include "rpc/codec.h"
#include "rpc/transport.h"
#include "tests/unit/rpc/rpc_test_util.h"

namespace ts::rpc {
namespace {

using testing::RawClient;
using testing::RunFor;
using testing::RunUntil;

// Answers every request on the io_context it runs on:
//   key "hold"   -> the responder is kept, unanswered, in `held`
//   key "big"    -> a value of 1 MiB
//   otherwise    -> echo: value = request value, slot = request id
struct EchoServer {
  explicit EchoServer(asio::io_context& io, size_t frame_bytes_max = kDefaultFrameBytesMax)
      : server(io, HostPort{"127.0.0.1", 0}, frame_bytes_max,
               [this](ClientRequest&& req, ClientServer::Responder respond) {
                 ++requests;
                 if (req.key == "hold") {
                   held_ids.push_back(req.id);
                   held.push_back(std::move(respond));
                   return;
                 }
                 ClientResponse r;
                 r.id = req.id;
                 r.code = ClientCode::kOk;
                 r.value = req.key == "big" ? std::string(1 << 20, 'b') : req.value;
                 r.slot = req.id;
                 respond(std::move(r));
               }) {
    Status s = server.Start();
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  HostPort addr() const { return {"127.0.0.1", server.bound_port()}; }

  ClientServer server;
  size_t requests = 0;
  std::vector<ClientServer::Responder> held;
  std::vector<uint64_t> held_ids;  // the request id of each held responder
};

// An EchoServer on its own thread, for BlockingClient (which runs only its
// private io_context while it waits).
struct ThreadedServer {
  ThreadedServer() : work(asio::make_work_guard(io)) {
    echo.emplace(io);
    thread = std::thread([this] { io.run(); });
  }
  // Runs fn on the server thread and waits for it.
  template <class F>
  auto Post(F fn) {
    std::packaged_task<decltype(fn())()> task(std::move(fn));
    auto result = task.get_future();
    asio::post(io, [&task] { task(); });
    return result.get();
  }
  ~ThreadedServer() {
    Post([this] { echo.reset(); });
    work.reset();
    thread.join();
  }
  TransportMetrics Metrics() {
    return Post([this] { return echo->server.metrics(); });
  }

  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work;
  std::optional<EchoServer> echo;
  std::thread thread;
};

ClientRequest Put(std::string key, std::string value) {
  ClientRequest r;
  r.op = ClientOp::kPut;
  r.key = std::move(key);
  r.value = std::move(value);
  return r;
}

TEST(BlockingClient, Call_ReturnsTheMatchingResponse) {
  ThreadedServer s;
  HostPort addr = s.Post([&] { return s.echo->addr(); });
  BlockingClient c;
  ASSERT_TRUE(c.Connect(addr, std::chrono::seconds(5)).ok());
  EXPECT_TRUE(c.connected());
  for (int i = 0; i < 20; ++i) {
    auto r = c.Call(Put("k", "v" + std::to_string(i)), std::chrono::seconds(5));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->value, "v" + std::to_string(i));
    EXPECT_EQ(r->id, r->slot);  // the echo returns the id the client assigned
    EXPECT_EQ(r->code, ClientCode::kOk);
  }
}

TEST(BlockingClient, Call_TimesOutAndClosesSoALateAnswerIsNeverTaken) {
  ThreadedServer s;
  HostPort addr = s.Post([&] { return s.echo->addr(); });
  BlockingClient c;
  ASSERT_TRUE(c.Connect(addr, std::chrono::seconds(5)).ok());
  auto r = c.Call(Put("hold", "x"), std::chrono::milliseconds(100));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kTimeout);
  EXPECT_FALSE(c.connected());
  EXPECT_EQ(c.Call(Put("k", "v"), std::chrono::seconds(1)).status().code(), Status::Code::kUnavailable);
  // Answer the held request now: a fresh connection must not see it.
  s.Post([&] {
    ClientResponse late;
    late.id = 1;
    late.value = "late";
    s.echo->held.at(0)(std::move(late));
    return 0;
  });
  ASSERT_TRUE(c.Connect(addr, std::chrono::seconds(5)).ok());
  auto fresh = c.Call(Put("k", "fresh"), std::chrono::seconds(5));
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  EXPECT_EQ(fresh->value, "fresh");
}

TEST(BlockingClient, Connect_ToAClosedPortIsUnavailable) {
  asio::io_context io;
  uint16_t port;
  {
    asio::ip::tcp::acceptor a(io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    port = a.local_endpoint().port();
  }
  BlockingClient c;
  Status st = c.Connect({"127.0.0.1", port}, std::chrono::seconds(5));
  EXPECT_EQ(st.code(), Status::Code::kUnavailable);
  EXPECT_EQ(st.message().rfind("connect to 127.0.0.1:" + std::to_string(port) + ": ", 0), 0u) << st.message();
  EXPECT_FALSE(c.connected());
  EXPECT_EQ(c.Call(Put("k", "v"), std::chrono::seconds(1)).status().code(), Status::Code::kUnavailable);
}

TEST(BlockingClient, Call_AfterTheServerGoesAwayIsUnavailable) {
  auto s = std::make_unique<ThreadedServer>();
  HostPort addr = s->Post([&] { return s->echo->addr(); });
  BlockingClient c;
  ASSERT_TRUE(c.Connect(addr, std::chrono::seconds(5)).ok());
  s.reset();
  auto r = c.Call(Put("k", "v"), std::chrono::seconds(5));
  EXPECT_EQ(r.status().code(), Status::Code::kUnavailable) << r.status().ToString();
  EXPECT_FALSE(c.connected());
}

TEST(AsyncClient, Send_HundredRequestsInFlightAreMatchedById) {
  asio::io_context io;
  EchoServer echo(io);
  AsyncClient c(io);
  std::optional<Status> connected;
  c.Connect(echo.addr(), [&](Status st) { connected = st; });
  ASSERT_TRUE(RunUntil(io, [&] { return connected.has_value(); }));
  ASSERT_TRUE(connected->ok()) << connected->ToString();

  // Hold all 100, then answer them in reverse order.
  const int n = 100;
  std::vector<std::optional<StatusOr<ClientResponse>>> results(n);
  for (int i = 0; i < n; ++i) {
    c.Send(Put("hold", "v" + std::to_string(i)), [&results, i](StatusOr<ClientResponse> r) { results[i] = r; });
  }
  ASSERT_TRUE(RunUntil(io, [&] { return echo.held.size() == static_cast<size_t>(n); }));
  // The server saw the ids in order (after the hello's); answer the last first.
  for (int i = n - 1; i >= 0; --i) {
    ClientResponse r;
    r.id = echo.held_ids[i];
    if (i > 0) {
      EXPECT_EQ(echo.held_ids[i], echo.held_ids[i - 1] + 1);
    }
    r.value = "answer" + std::to_string(i);
    echo.held[i](std::move(r));
  }
  ASSERT_TRUE(RunUntil(io, [&] {
    for (const auto& r : results) {
      if (!r) return false;
    }
    return true;
  }));
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(results[i]->ok()) << results[i]->status().ToString();
    EXPECT_EQ((*results[i])->value, "answer" + std::to_string(i));
  }
  EXPECT_EQ(echo.server.metrics().frames_in, static_cast<uint64_t>(n) + 1);  // and the hello
}

TEST(AsyncClient, Send_EveryPendingCallbackGetsUnavailableWhenTheServerStops) {
  asio::io_context io;
  auto echo = std::make_unique<EchoServer>(io);
  AsyncClient c(io);
  std::optional<Status> connected;
  c.Connect(echo->addr(), [&](Status st) { connected = st; });
  ASSERT_TRUE(RunUntil(io, [&] { return connected.has_value() && connected->ok(); }));
  std::vector<Status> failures;
  for (int i = 0; i < 10; ++i) {
    c.Send(Put("hold", "x"), [&](StatusOr<ClientResponse> r) { failures.push_back(r.status()); });
  }
  ASSERT_TRUE(RunUntil(io, [&] { return echo->held.size() == 10; }));
  auto held = std::move(echo->held);
  echo.reset();  // closes the connection
  ASSERT_TRUE(RunUntil(io, [&] { return failures.size() == 10; }));
  for (const Status& st : failures) EXPECT_EQ(st.code(), Status::Code::kUnavailable) << st.ToString();
  // Responders outlive the server and the connection: answering is a no-op.
  ClientResponse r;
  r.id = 1;
  held[0](std::move(r));
  // Sending now fails at once.
  std::optional<Status> after;
  c.Send(Put("k", "v"), [&](StatusOr<ClientResponse> r) { after = r.status(); });
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->code(), Status::Code::kUnavailable);
}

TEST(AsyncClient, Send_OverTheFrameCapFailsAtOnceAndKeepsTheConnection) {
  asio::io_context io;
  EchoServer echo(io, 4096);
  AsyncClient c(io, 4096);
  std::optional<Status> connected;
  c.Connect(echo.addr(), [&](Status st) { connected = st; });
  ASSERT_TRUE(RunUntil(io, [&] { return connected.has_value() && connected->ok(); }));
  std::optional<StatusOr<ClientResponse>> big, small;
  c.Send(Put("k", std::string(5000, 'x')), [&](StatusOr<ClientResponse> r) { big = r; });
  ASSERT_TRUE(big.has_value());
  EXPECT_EQ(big->status().code(), Status::Code::kInvalidArgument);
  c.Send(Put("k", "small"), [&](StatusOr<ClientResponse> r) { small = r; });
  ASSERT_TRUE(RunUntil(io, [&] { return small.has_value(); }));
  ASSERT_TRUE(small->ok()) << small->status().ToString();
  EXPECT_EQ((*small)->value, "small");
}

TEST(ClientServer, Respond_OverTheFrameCapBecomesAnInternalError) {
  asio::io_context io;
  EchoServer echo(io, 64 << 10);  // "big" answers 1 MiB
  AsyncClient c(io, 64 << 10);
  std::optional<Status> connected;
  c.Connect(echo.addr(), [&](Status st) { connected = st; });
  ASSERT_TRUE(RunUntil(io, [&] { return connected.has_value() && connected->ok(); }));
  std::optional<StatusOr<ClientResponse>> r;
  c.Send(Put("big", ""), [&](StatusOr<ClientResponse> got) { r = got; });
  ASSERT_TRUE(RunUntil(io, [&] { return r.has_value(); }));
  ASSERT_TRUE(r->ok()) << r->status().ToString();
  EXPECT_EQ((*r)->code, ClientCode::kInternal);
  EXPECT_NE((*r)->message.find("exceeds the frame cap"), std::string::npos) << (*r)->message;
}

// Garbage, truncated, oversized and mistyped frames close their own
// connection and count; a well-behaved client is served afterwards.
TEST(ClientServer, Frames_ManyInOneWriteAndOneSplitByteByByteAreEachServedInOrder) {
  asio::io_context io;
  EchoServer echo(io);
  RawClient raw(io);
  raw.Connect(echo.server.bound_port());
  // Every twentieth value is 20 KB, so the burst takes several reads and frames
  // straddle their boundaries.
  auto value_of = [](uint64_t id) {
    return id % 20 == 0 ? std::string(20000, static_cast<char>('a' + id % 26)) : "value " + std::to_string(id);
  };
  auto frame = [&](uint64_t id) {
    ClientRequest r = Put("k", value_of(id));
    r.id = id;
    return EncodeFrame(FrameType::kClientRequest, EncodeClientRequest(r));
  };
  std::string burst;  // 200 frames, 200 KB, in one write
  for (uint64_t id = 1; id <= 200; ++id) burst += frame(id);
  raw.Write(burst);
  std::string split = frame(201);
  for (char ch : split) {
    raw.Write(std::string(1, ch));
    RunFor(io, std::chrono::milliseconds(1));  // the server reads each byte on its own
  }
  for (uint64_t id = 1; id <= 201; ++id) {
    FrameType type;
    std::string payload;
    ASSERT_TRUE(raw.ReadFrame(&type, &payload)) << "answer " << id;
    ClientResponse r;
    ASSERT_TRUE(DecodeClientResponse(payload, &r).ok());
    EXPECT_EQ(r.id, id);
    EXPECT_EQ(r.value, value_of(id));
  }
  EXPECT_EQ(echo.requests, 201u);
  EXPECT_EQ(echo.server.metrics().bad_frames, 0u);
}

// In wire version 1 (a 1.1.0 client's), an unknown op is a bad frame too.
TEST(ClientServer, BadFrames_CloseOnlyTheirConnection) {
  asio::io_context io;
  EchoServer echo(io);
  ClientRequest bad_op = Put("k", "v");
  std::string unknown_op = EncodeClientRequest(bad_op, 1);
  unknown_op[8] = 42;
  std::string oversized = EncodeFrame(FrameType::kClientRequest, "", 1);
  oversized[11] = 0x40;  // 1 GiB declared
  std::string truncated = EncodeFrame(FrameType::kClientRequest, EncodeClientRequest(Put("k", "v"), 1), 1);
  truncated.resize(truncated.size() - 2);
  std::string bad_crc = EncodeFrame(FrameType::kClientRequest, EncodeClientRequest(Put("k", "v"), 1), 1);
  bad_crc[20] ^= 0x10;
  std::string hostile_length = EncodeFrame(
      FrameType::kClientRequest, std::string("\x01\0\0\0\0\0\0\0\x01", 9) + std::string("\0\0\0\x40", 4) + "abc", 1);
  const std::vector<std::string> inputs = {
      std::string(100, '\xee'),                                   // garbage
      oversized,                                                  // length over the cap
      truncated,                                                  // ends mid-payload
      bad_crc,                                                    // checksum mismatch
      EncodeFrame(FrameType::kClientRequest, unknown_op, 1),         // unknown op 42
      hostile_length,                                             // 1 GiB key in 16 bytes
      EncodeFrame(FrameType::kPeerMessage, "x", 1),                  // not a client frame
      EncodeFrame(FrameType::kClientRequest, "", 1) + "\x01\x02",    // empty payload, then junk
  };
  uint64_t expected = 0;
  for (const std::string& bytes : inputs) {
    RawClient raw(io);
    raw.Connect(echo.server.bound_port());
    raw.Write(bytes);
    raw.ShutdownSend();
    EXPECT_TRUE(raw.WaitClosed()) << "input " << expected;
    ++expected;
    EXPECT_EQ(echo.server.metrics().bad_frames, expected) << "input " << expected - 1;
  }
  EXPECT_EQ(echo.requests, 0u);

  AsyncClient c(io);
  std::optional<Status> connected;
  c.Connect(echo.addr(), [&](Status st) { connected = st; });
  ASSERT_TRUE(RunUntil(io, [&] { return connected.has_value() && connected->ok(); }));
  std::optional<StatusOr<ClientResponse>> r;
  c.Send(Put("k", "still serving"), [&](StatusOr<ClientResponse> got) { r = got; });
  ASSERT_TRUE(RunUntil(io, [&] { return r.has_value(); }));
  ASSERT_TRUE(r->ok());
  EXPECT_EQ((*r)->value, "still serving");
}

TEST(ClientServer, BadFrames_ServerOnAnotherThreadKeepsServingABlockingClient) {
  ThreadedServer s;
  HostPort addr = s.Post([&] { return s.echo->addr(); });
  asio::io_context io;
  {
    asio::ip::tcp::socket raw(io);
    raw.connect(asio::ip::tcp::endpoint(asio::ip::make_address(addr.host), addr.port));
    asio::write(raw, asio::buffer(std::string(32, '\x01')));
    char b;
    std::error_code ec;
    raw.read_some(asio::buffer(&b, 1), ec);  // blocks until the server closes it
    EXPECT_EQ(ec, asio::error::eof);
  }
  EXPECT_EQ(s.Metrics().bad_frames, 1u);
  BlockingClient c;
  ASSERT_TRUE(c.Connect(addr, std::chrono::seconds(5)).ok());
  auto r = c.Call(Put("k", "v"), std::chrono::seconds(5));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->value, "v");
}

// FlushWrites puts an answer given outside the loop's handlers on the wire
// at once: the client has it while the server's io_context is not running
// (otherwise it would leave only when the loop next runs its handlers). It
// leaves once: running the loop afterwards sends nothing more.
TEST(ClientServer, FlushWrites_SendsAnswersWithoutWaitingForTheLoop) {
  asio::io_context io;
  EchoServer echo(io);
  asio::io_context client_io;  // never run: the client reads with plain calls
  asio::ip::tcp::socket sock(client_io);
  sock.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), echo.server.bound_port()));
  ClientRequest hold = Put("hold", "");
  hold.id = 7;
  asio::write(sock, asio::buffer(EncodeFrame(FrameType::kClientRequest, EncodeClientRequest(hold))));
  ASSERT_TRUE(RunUntil(io, [&] { return echo.held.size() == 1; }));
  sock.non_blocking(true);
  auto available = [&] {
    std::error_code ec;
    return sock.available(ec);
  };
  ClientResponse r;
  r.id = 7;
  r.code = ClientCode::kOk;
  r.value = "answered";
  echo.held.front()(std::move(r));
  EXPECT_EQ(available(), 0u) << "queued only, until the loop runs or FlushWrites";
  echo.server.FlushWrites();
  // Loopback delivers within the send call; allow the kernel a deadline anyway.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (available() < kFrameHeaderBytes && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  const size_t first = available();
  ASSERT_GE(first, kFrameHeaderBytes);
  RunFor(io, std::chrono::milliseconds(50));
  EXPECT_EQ(available(), first) << "the answer was sent twice";
  std::string bytes(first, '\0');
  ASSERT_EQ(asio::read(sock, asio::buffer(bytes)), first);
  auto h = ParseFrameHeader(std::string_view(bytes).substr(0, kFrameHeaderBytes), 1 << 30);
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(bytes.size(), kFrameHeaderBytes + h->length);
  ClientResponse got;
  ASSERT_TRUE(DecodeClientResponse(bytes.substr(kFrameHeaderBytes), &got).ok());
  EXPECT_EQ(got.id, 7u);
  EXPECT_EQ(got.value, "answered");
}

TEST(ClientServer, SlowReader_IsCutOffOnceItsResponsesPassTheQueueCap) {
  asio::io_context io;
  EchoServer echo(io);  // queue cap: 16 MiB; "big" answers 1 MiB each
  RawClient raw(io);
  raw.Connect(echo.server.bound_port(), /*read=*/false);
  const int n = 64;
  std::string requests;
  for (int i = 0; i < n; ++i) requests += EncodeFrame(FrameType::kClientRequest, EncodeClientRequest(Put("big", "")));
  raw.Write(requests);
  // Once the server has closed the connection, its kernel answers any new
  // byte with a reset and writing fails: that is how the test sees the cut.
  std::string probe = EncodeFrame(FrameType::kClientRequest, EncodeClientRequest(Put("k", "probe")));
  ASSERT_TRUE(RunUntil(io, [&] { return !raw.TryWrite(probe); }));
  // Kernel buffers hold at most ~10 MiB here, the queue 16 MiB: the server
  // stopped long before answering everything.
  EXPECT_LT(echo.requests, static_cast<size_t>(n));
  EXPECT_GE(echo.requests, 16u);
  EXPECT_EQ(echo.server.metrics().bad_frames, 0u);
}

}  // namespace
}  // namespace ts::rpc

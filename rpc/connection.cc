// Connection; see connection.h.
#include "rpc/connection.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cassert>
#include <cstring>

namespace ts::rpc {

StatusOr<asio::ip::tcp::endpoint> ResolveEndpoint(asio::io_context& io, const HostPort& hp) {
  std::error_code ec;
  auto addr = asio::ip::make_address(hp.host, ec);
  if (!ec) return asio::ip::tcp::endpoint(addr, hp.port);
  asio::ip::tcp::resolver resolver(io);
  auto results = resolver.resolve(hp.host, std::to_string(hp.port), ec);
  if (ec || results.empty()) {
    return Status::Unavailable("cannot resolve " + hp.ToString() + (ec ? ": " + ec.message() : std::string()));
  }
  return results.begin()->endpoint();
}
namespace {

// A read buffer that grew past this (a large frame) is released once
// drained, so an idle connection does not keep its high-water mark.
constexpr size_t kKeepBufferBytes = 1 << 20;
// Payloads from this size on are queued as they are rather than copied into
// a shared buffer; smaller frames are coalesced up to it.
constexpr size_t kCoalesceBytes = 64 << 10;
// Bytes asked of the socket per read: every frame already there is then
// delivered from one system call, not two per frame.
constexpr size_t kReadChunkBytes = 64 << 10;
// Urgent frames (heartbeats and the like, tens of bytes each) may queue
// this far past queue_bytes_max: a queue full of Accepts for a slow peer
// must not also drop the heartbeats that keep the lease, which would then
// leave ahead of those Accepts.
constexpr size_t kUrgentSlackBytes = 1 << 20;

}  // namespace

Connection::Connection(std::shared_ptr<Stream> stream, std::string what, size_t frame_bytes_max,
                       size_t queue_bytes_max, TransportMetrics* metrics)
    : stream_(std::move(stream)),
      what_(std::move(what)),
      frame_bytes_max_(frame_bytes_max),
      queue_bytes_max_(queue_bytes_max),
      metrics_(metrics != nullptr ? metrics : &own_metrics_) {
  std::error_code ec;
  // Small request/response frames must not wait for Nagle's timer.
  stream_->socket().set_option(asio::ip::tcp::no_delay(true), ec);
  auto ep = stream_->socket().remote_endpoint(ec);
  remote_ = ec ? "?" : ep.address().to_string() + ":" + std::to_string(ep.port());
}

void Connection::Start(OnFrame on_frame, OnClose on_close) {
  assert(on_frame != nullptr);
  on_frame_ = std::move(on_frame);
  on_close_ = std::move(on_close);
  ReadMore();
}

void Connection::BadFrame(const std::string& reason) {
  if (!open_) return;
  ++metrics_->bad_frames;
  spdlog::warn("{} connection {}: bad frame: {}; closing it", what_, remote_, reason);
  Close("bad frame: " + reason);
}

void Connection::ReadMore() {
  // Room for at least one chunk, or for the rest of the frame whose header
  // is buffered; what is left of the buffer moves to its front first.
  size_t want = std::max(kReadChunkBytes, frame_wanted_ > buffered() ? frame_wanted_ - buffered() : 0);
  if (in_start_ > 0 && in_size_ - in_end_ < want) {
    std::memmove(in_.get(), in_.get() + in_start_, buffered());
    in_end_ -= in_start_;
    in_start_ = 0;
  }
  if (in_size_ - in_end_ < want) {
    // Not zeroed: every byte is read before it is looked at, and zeroing a
    // megabyte frame's buffer cost the loop as much as reading it.
    std::unique_ptr<char[]> bigger(new char[in_end_ + want]);
    if (in_end_ > 0) std::memcpy(bigger.get(), in_.get(), in_end_);
    in_ = std::move(bigger);
    in_size_ = in_end_ + want;
  }
  auto self = shared_from_this();
  auto on_read = [self](const std::error_code& ec, size_t n) {
    if (!self->open_) return;
    self->in_end_ += n;
    if (!self->DeliverFrames()) return;
    if (!ec) {
      self->ReadMore();
      return;
    }
    if (ec != asio::error::eof) {
      self->Close(ec.message());
    } else if (self->buffered() == 0) {
      self->Close("closed by the other end");
    } else if (self->buffered() < kFrameHeaderBytes) {
      self->BadFrame("truncated header: " + std::to_string(self->buffered()) + " of " +
                     std::to_string(kFrameHeaderBytes) + " bytes before end of stream");
    } else {
      self->BadFrame("truncated payload: " + std::to_string(self->buffered() - kFrameHeaderBytes) + " of " +
                     std::to_string(self->frame_wanted_ - kFrameHeaderBytes) + " bytes before end of stream");
    }
  };
  stream_->Visit([&](auto& s) {
    s.async_read_some(asio::buffer(in_.get() + in_end_, in_size_ - in_end_), std::move(on_read));
  });
}

bool Connection::DeliverFrames() {
  while (buffered() >= kFrameHeaderBytes) {
    const char* at = in_.get() + in_start_;
    // The length cap is checked here, before the buffer grows for the frame.
    auto h = ParseFrameHeader(std::string_view(at, kFrameHeaderBytes), frame_bytes_max_);
    if (!h.ok()) {
      BadFrame(h.status().message());
      return false;
    }
    frame_wanted_ = kFrameHeaderBytes + h->length;
    if (buffered() < frame_wanted_) return true;
    std::string_view payload(at + kFrameHeaderBytes, h->length);
    if (Status s = CheckFramePayload(*h, payload); !s.ok()) {
      BadFrame(s.message());
      return false;
    }
    ++metrics_->frames_in;
    frame_wire_version_ = h->wire_version;
    if (Status s = on_frame_(h->type, payload); !s.ok()) {
      BadFrame(s.message());
      return false;
    }
    in_start_ += frame_wanted_;
    frame_wanted_ = 0;
    // A connection being closed after its last words reads no more.
    if (!open_ || close_after_writes_) return false;
  }
  if (buffered() == 0) {
    in_start_ = in_end_ = 0;
    if (in_size_ > kKeepBufferBytes) {
      in_.reset();
      in_size_ = 0;
    }
  }
  return true;
}

bool Connection::SendFrame(FrameType type, std::string_view payload, bool urgent) {
  return Queue(type, payload, nullptr, urgent);
}

bool Connection::SendFrame(FrameType type, std::string&& payload, bool urgent) {
  return Queue(type, payload, &payload, urgent);
}

// `large`, when not null, is the payload's own string, which a large frame
// takes over instead of copying.
bool Connection::Queue(FrameType type, std::string_view payload, std::string* large, bool urgent) {
  if (!open_ || close_after_writes_) return false;
  const size_t bytes = kFrameHeaderBytes + payload.size();
  if (queued_bytes() + bytes > queue_bytes_max_ + (urgent ? kUrgentSlackBytes : 0)) return false;
  std::deque<OutChunk>& q = urgent ? urgent_ : queued_;
  if (payload.size() >= kCoalesceBytes) {
    OutChunk c;
    AppendFrameHeader(type, payload, &c.head, wire_version_);
    c.body = large != nullptr ? std::move(*large) : std::string(payload);
    q.push_back(std::move(c));
  } else {
    if (q.empty() || !q.back().body.empty() || q.back().head.size() >= kCoalesceBytes) q.emplace_back();
    AppendFrame(type, payload, &q.back().head, wire_version_);
  }
  queued_bytes_ += bytes;
  ++metrics_->frames_out;
  ScheduleWrite();
  return true;
}

void Connection::ScheduleWrite() {
  if (write_in_flight_ || write_scheduled_) return;
  // Posted rather than started here, so that the frames the current handler
  // goes on to queue join this write.
  write_scheduled_ = true;
  asio::post(stream_->executor(), [self = shared_from_this()] {
    self->write_scheduled_ = false;
    if (self->open_ && !self->write_in_flight_) self->WriteMore();
  });
}

void Connection::StartWriteNow() {
  if (open_ && !write_in_flight_ && queued_bytes_ > 0) WriteMore();
}

void Connection::WriteMore() {
  assert(!write_in_flight_);
  if (queued_bytes_ == 0) {
    if (close_after_writes_) Close(close_reason_);
    return;
  }
  writing_.clear();
  writing_bytes_ = 0;
  auto take = [this](std::deque<OutChunk>& q) {
    writing_bytes_ += q.front().size();
    writing_.push_back(std::move(q.front()));
    q.pop_front();
  };
  while (!urgent_.empty()) take(urgent_);
  while (!queued_.empty() && (writing_.empty() || writing_bytes_ < kWriteBatchBytes)) take(queued_);
  queued_bytes_ -= writing_bytes_;
  std::vector<asio::const_buffer> buffers;
  buffers.reserve(2 * writing_.size());
  for (const OutChunk& c : writing_) {
    buffers.push_back(asio::buffer(c.head));
    if (!c.body.empty()) buffers.push_back(asio::buffer(c.body));
  }
  write_in_flight_ = true;
  auto self = shared_from_this();
  auto on_written = [self](const std::error_code& ec, size_t) {
    self->write_in_flight_ = false;
    self->writing_.clear();
    self->writing_bytes_ = 0;
    if (!self->open_) return;
    if (ec) {
      self->Close(ec.message());
      return;
    }
    self->WriteMore();
  };
  stream_->Visit([&](auto& s) { asio::async_write(s, buffers, std::move(on_written)); });
}

void Connection::CloseAfterWrites(const std::string& reason) {
  if (!open_ || close_after_writes_) return;
  close_after_writes_ = true;
  close_reason_ = reason;
  if (!write_in_flight_ && !write_scheduled_) WriteMore();
}

void Connection::Close(const std::string& reason) {
  if (!open_) return;
  auto self = shared_from_this();  // on_close_ may drop the owner's reference
  open_ = false;
  urgent_.clear();
  queued_.clear();
  queued_bytes_ = 0;
  stream_->Close();
  if (on_close_) {
    // on_frame_ stays: Close may run inside it. Owners' callbacks capture
    // weak or raw pointers only, so keeping it creates no cycle.
    OnClose cb = std::move(on_close_);
    on_close_ = nullptr;
    cb(reason);
  }
}

}  // namespace ts::rpc

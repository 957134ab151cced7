// Connection; see connection.h.
#include "rpc/connection.h"

#include <spdlog/spdlog.h>

#include <cassert>

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

// A write buffer that grew past this (a burst) is released once drained, so
// an idle connection does not keep its high-water mark.
constexpr size_t kKeepBufferBytes = 1 << 20;

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
  ReadHeader();
}

void Connection::BadFrame(const std::string& reason) {
  if (!open_) return;
  ++metrics_->bad_frames;
  spdlog::warn("{} connection {}: bad frame: {}; closing it", what_, remote_, reason);
  Close("bad frame: " + reason);
}

void Connection::ReadHeader() {
  auto self = shared_from_this();
  auto on_header = [self](const std::error_code& ec, size_t n) {
    if (!self->open_) return;
    if (ec) {
      if (ec == asio::error::eof && n > 0) {
        self->BadFrame("truncated header: " + std::to_string(n) + " of " + std::to_string(kFrameHeaderBytes) +
                       " bytes before end of stream");
      } else {
        self->Close(ec == asio::error::eof ? "closed by the other end" : ec.message());
      }
      return;
    }
    auto h = ParseFrameHeader(std::string_view(self->header_, kFrameHeaderBytes), self->frame_bytes_max_);
    if (!h.ok()) {
      self->BadFrame(h.status().message());
      return;
    }
    self->ReadPayload(*h);
  };
  stream_->Visit([&](auto& s) { asio::async_read(s, asio::buffer(header_, kFrameHeaderBytes), std::move(on_header)); });
}

void Connection::ReadPayload(const FrameHeader& h) {
  assert(h.length <= frame_bytes_max_);
  payload_.resize(h.length);  // within frame_bytes_max: ParseFrameHeader checked it
  auto self = shared_from_this();
  auto on_payload = [self, h](const std::error_code& ec, size_t n) {
                     if (!self->open_) return;
                     if (ec) {
                       if (ec == asio::error::eof) {
                         self->BadFrame("truncated payload: " + std::to_string(n) + " of " +
                                        std::to_string(h.length) + " bytes before end of stream");
                       } else {
                         self->Close(ec.message());
                       }
                       return;
                     }
                     if (Status s = CheckFramePayload(h, self->payload_); !s.ok()) {
                       self->BadFrame(s.message());
                       return;
                     }
                     ++self->metrics_->frames_in;
                     if (Status s = self->on_frame_(h.type, self->payload_); !s.ok()) {
                       self->BadFrame(s.message());
                       return;
                     }
                     if (self->payload_.capacity() > kKeepBufferBytes) std::string().swap(self->payload_);
                     // A connection being closed after its last words reads no more.
                     if (self->open_ && !self->close_after_writes_) self->ReadHeader();
  };
  stream_->Visit([&](auto& s) { asio::async_read(s, asio::buffer(payload_.data(), payload_.size()), std::move(on_payload)); });
}

bool Connection::SendFrame(FrameType type, std::string_view payload) {
  if (!open_ || close_after_writes_) return false;
  if (queued_bytes() + kFrameHeaderBytes + payload.size() > queue_bytes_max_) return false;
  AppendFrame(type, payload, &pending_);
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
  if (open_ && !write_in_flight_ && !pending_.empty()) WriteMore();
}

void Connection::WriteMore() {
  assert(!write_in_flight_);
  if (pending_.empty()) {
    if (close_after_writes_) Close(close_reason_);
    return;
  }
  writing_.swap(pending_);
  pending_.clear();
  write_in_flight_ = true;
  auto self = shared_from_this();
  auto on_written = [self](const std::error_code& ec, size_t) {
    self->write_in_flight_ = false;
    if (!self->open_) return;
    if (ec) {
      self->Close(ec.message());
      return;
    }
    self->writing_.clear();
    if (self->writing_.capacity() > kKeepBufferBytes) std::string().swap(self->writing_);
    self->WriteMore();
  };
  stream_->Visit([&](auto& s) { asio::async_write(s, asio::buffer(writing_), std::move(on_written)); });
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
  pending_.clear();
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

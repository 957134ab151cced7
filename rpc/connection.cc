// Connection; see connection.h.
#include "rpc/connection.h"

namespace ts::rpc {

Connection::Connection(asio::ip::tcp::socket socket, size_t frame_bytes_max, size_t queue_bytes_max,
                       TransportMetrics* metrics)
    : socket_(std::move(socket)),
      frame_bytes_max_(frame_bytes_max),
      queue_bytes_max_(queue_bytes_max),
      metrics_(metrics) {
  std::error_code ec;
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
  auto ep = socket_.remote_endpoint(ec);
  remote_ = ec ? "?" : ep.address().to_string() + ":" + std::to_string(ep.port());
}

void Connection::Start(OnFrame on_frame, OnClose on_close) {
  on_frame_ = std::move(on_frame);
  on_close_ = std::move(on_close);
  ReadHeader();
}

void Connection::ReadHeader() {
  auto self = shared_from_this();
  asio::async_read(socket_, asio::buffer(header_, kFrameHeaderBytes), [self](const std::error_code& ec, size_t) {
    if (!self->open_) return;
    if (ec) {
      self->Close(ec == asio::error::eof ? "closed by peer" : ec.message());
      return;
    }
    auto h = ParseFrameHeader(std::string_view(self->header_, kFrameHeaderBytes), self->frame_bytes_max_);
    if (!h.ok()) {
      ++self->metrics_->bad_frames;
      self->Close("bad frame: " + h.status().message());
      return;
    }
    self->ReadPayload(*h);
  });
}

void Connection::ReadPayload(const FrameHeader& h) {
  payload_.resize(h.length);  // within frame_bytes_max: checked above
  auto self = shared_from_this();
  asio::async_read(socket_, asio::buffer(payload_.data(), payload_.size()), [self, h](const std::error_code& ec, size_t) {
    if (!self->open_) return;
    if (ec) {
      self->Close(ec == asio::error::eof ? "closed by peer mid-frame" : ec.message());
      return;
    }
    if (Status s = CheckFramePayload(h, self->payload_); !s.ok()) {
      ++self->metrics_->bad_frames;
      self->Close("bad frame: " + s.message());
      return;
    }
    ++self->metrics_->frames_in;
    if (!self->on_frame_(h.type, self->payload_)) {
      ++self->metrics_->bad_frames;
      self->Close("protocol error");
      return;
    }
    if (self->open_) self->ReadHeader();
  });
}

bool Connection::SendFrame(FrameType type, std::string_view payload) {
  if (!open_ || close_after_writes_) return false;
  if (pending_.size() + payload.size() + kFrameHeaderBytes > queue_bytes_max_) return false;
  AppendFrame(type, payload, &pending_);
  ++metrics_->frames_out;
  if (!write_in_flight_) WriteMore();
  return true;
}

void Connection::WriteMore() {
  if (pending_.empty()) {
    if (close_after_writes_) Close(close_reason_);
    return;
  }
  writing_.swap(pending_);
  pending_.clear();
  write_in_flight_ = true;
  auto self = shared_from_this();
  asio::async_write(socket_, asio::buffer(writing_), [self](const std::error_code& ec, size_t) {
    self->write_in_flight_ = false;
    if (!self->open_) return;
    if (ec) {
      self->Close(ec.message());
      return;
    }
    self->writing_.clear();
    self->WriteMore();
  });
}

void Connection::CloseAfterWrites(const std::string& reason) {
  close_after_writes_ = true;
  close_reason_ = reason;
  if (!write_in_flight_) WriteMore();
}

void Connection::Close(const std::string& reason) {
  if (!open_) return;
  open_ = false;
  std::error_code ec;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  socket_.close(ec);
  if (on_close_) {
    // on_frame_ stays: Close may run inside it. Owners capture weak or raw
    // pointers only, so keeping it creates no cycle.
    OnClose cb = std::move(on_close_);
    on_close_ = nullptr;
    cb(reason);
  }
}

}  // namespace ts::rpc

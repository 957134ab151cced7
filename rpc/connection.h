// Connection: one framed TCP stream on an io_context thread, shared by the
// peer transport, the client server and the async client.
//
// Reading: 16-byte header -> ParseFrameHeader (the length cap is checked
// before the payload buffer grows) -> payload -> CRC check -> OnFrame. Any
// failure closes the connection with a reason and counts a bad frame.
// Writing: frames are appended to one pending buffer; a single async_write
// carries everything queued since the last one, so a burst of small messages
// costs one system call. Past queue_bytes_max, SendFrame refuses (returns
// false) and the caller decides: drop (peers) or close (clients).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <asio.hpp>

#include "rpc/frame.h"
#include "rpc/transport.h"

namespace ts::rpc {

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // Return false from OnFrame to close the connection (a protocol error).
  using OnFrame = std::function<bool(FrameType type, std::string_view payload)>;
  using OnClose = std::function<void(const std::string& reason)>;

  Connection(asio::ip::tcp::socket socket, size_t frame_bytes_max, size_t queue_bytes_max, TransportMetrics* metrics);

  void Start(OnFrame on_frame, OnClose on_close);
  bool SendFrame(FrameType type, std::string_view payload);
  // Closes once everything queued so far is written (refusals, last words).
  void CloseAfterWrites(const std::string& reason);
  void Close(const std::string& reason);
  bool open() const { return open_; }
  std::string remote() const { return remote_; }

 private:
  void ReadHeader();
  void ReadPayload(const FrameHeader& h);
  void WriteMore();

  asio::ip::tcp::socket socket_;
  size_t frame_bytes_max_;
  size_t queue_bytes_max_;
  TransportMetrics* metrics_;
  OnFrame on_frame_;
  OnClose on_close_;
  std::string remote_;
  char header_[kFrameHeaderBytes];
  std::string payload_;
  std::string pending_;
  std::string writing_;
  bool write_in_flight_ = false;
  bool close_after_writes_ = false;
  std::string close_reason_;
  bool open_ = true;
};

}  // namespace ts::rpc

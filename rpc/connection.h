// Connection (private to rpc/): one framed TCP stream on an io_context
// thread, shared by the peer transport, the client server and the async
// client.
//
// Reading: whatever the socket holds, up to 64 KiB a read, into one buffer;
// then every whole frame in it, in order: 16-byte header -> ParseFrameHeader
// (the length cap is checked before the buffer grows for the payload) ->
// CRC check -> OnFrame (the payload is a view into the buffer, valid for
// the call). A
// malformed, truncated or unexpected frame closes the connection with a
// one-line warning and counts in metrics->bad_frames; nothing else is harmed.
// Writing: small frames are appended to a shared buffer, a large payload
// is queued as it is (moved, not copied), and the write is started from a
// posted handler, so every frame queued by the current handler (a burst of
// small Accept/Accepted messages, many responses) leaves in a single
// gathered async_write: one system call. One write carries at most about
// kWriteBatchBytes of queued frames (at least one frame), and urgent frames
// (a leader's heartbeats and their acknowledgements) go ahead of every frame
// no write has taken yet: behind megabytes of Accepts a heartbeat would wait
// as long as the link takes to carry them, past the lease. Frames of one
// kind keep their order. Past queue_bytes_max (queued plus in flight),
// SendFrame refuses and the caller decides: drop (peers) or close (clients);
// urgent frames have 1 MiB more, so a queue full of Accepts does not drop
// the heartbeats that would leave ahead of them.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <asio.hpp>

#include "consensus/status.h"
#include "rpc/frame.h"
#include "rpc/stream.h"
#include "rpc/transport.h"

namespace ts::rpc {

// host:port to a TCP endpoint: a literal address directly, else one
// (blocking) resolver lookup. Unavailable("cannot resolve H:P: reason").
StatusOr<asio::ip::tcp::endpoint> ResolveEndpoint(asio::io_context& io, const HostPort& hp);

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // A non-OK status closes the connection as a bad frame (counted, logged
  // with the status message). To close for another reason (a refusal), call
  // Close() or CloseAfterWrites() and return OK.
  using OnFrame = std::function<Status(FrameType type, std::string_view payload)>;
  // Runs once, when the connection closes for any reason (also from Close()).
  using OnClose = std::function<void(const std::string& reason)>;

  // `stream` has done its handshake (Stream::Handshake). `what` names the
  // connection in log lines ("peer", "client", "server"). `metrics` must
  // outlive every handler of this connection, or be null.
  Connection(std::shared_ptr<Stream> stream, std::string what, size_t frame_bytes_max, size_t queue_bytes_max,
             TransportMetrics* metrics);

  // Starts reading. Call once, on the io_context thread.
  void Start(OnFrame on_frame, OnClose on_close);
  // Queues one frame, its header naming wire_version(). False if closed,
  // closing, or the queue cap is reached. An urgent frame leaves before
  // the frames queued and not yet being written.
  bool SendFrame(FrameType type, std::string_view payload, bool urgent = false);
  bool SendFrame(FrameType type, std::string&& payload, bool urgent = false);
  // The wire version of the frames this side sends (rpc/frame.h): set by
  // the owner once it knows what the other end speaks; 1 until then, which
  // every release reads. The payloads must be encoded in the same version.
  void set_wire_version(uint8_t v) { wire_version_ = v; }
  uint8_t wire_version() const { return wire_version_; }
  // The wire version of the frame being delivered (valid inside OnFrame).
  uint8_t frame_wire_version() const { return frame_wire_version_; }
  // Starts writing what is queued now instead of from the posted handler:
  // for a caller about to block (a node before its fsync).
  void StartWriteNow();
  // Stops reading and closes once everything queued so far is written
  // (a refusal's last words).
  void CloseAfterWrites(const std::string& reason);
  // Closes now; queued frames are discarded. Idempotent.
  void Close(const std::string& reason);
  bool open() const { return open_; }
  const std::string& remote() const { return remote_; }
  // The peer's certificate (present only on a TLS stream).
  const CertIdentity& peer_identity() const { return stream_->peer_identity(); }
  size_t queued_bytes() const { return queued_bytes_ + writing_bytes_; }
  // At most this many bytes of queued frames go in one write (a larger
  // frame goes whole).
  static constexpr size_t kWriteBatchBytes = 256 << 10;

 private:
  void ReadMore();
  // Delivers every whole frame buffered; false once the connection is
  // closed or closing (nothing more to read).
  bool DeliverFrames();
  size_t buffered() const { return in_end_ - in_start_; }
  void BadFrame(const std::string& reason);
  // A run of frames: small ones coalesced in `head`, or one frame's header
  // in `head` and its payload, as it was handed over, in `body`.
  struct OutChunk {
    std::string head;
    std::string body;
    size_t size() const { return head.size() + body.size(); }
  };
  bool Queue(FrameType type, std::string_view payload, std::string* large, bool urgent);
  void ScheduleWrite();
  void WriteMore();

  std::shared_ptr<Stream> stream_;
  std::string what_;
  size_t frame_bytes_max_;
  size_t queue_bytes_max_;
  TransportMetrics* metrics_;
  TransportMetrics own_metrics_;  // used when the caller passes none
  OnFrame on_frame_;
  OnClose on_close_;
  std::string remote_;
  std::unique_ptr<char[]> in_;  // bytes read: [in_start_, in_end_) not yet delivered
  size_t in_size_ = 0;          // of in_
  size_t in_start_ = 0;
  size_t in_end_ = 0;
  size_t frame_wanted_ = 0;  // header plus payload of the frame at in_start_, once its header is in
  std::deque<OutChunk> urgent_;  // queued, not yet taken by a write: urgent frames
  std::deque<OutChunk> queued_;  // the others
  size_t queued_bytes_ = 0;      // in urgent_ and queued_
  std::vector<OutChunk> writing_;  // the frames the write in flight carries
  size_t writing_bytes_ = 0;
  bool write_in_flight_ = false;
  bool write_scheduled_ = false;
  bool close_after_writes_ = false;
  std::string close_reason_;
  bool open_ = true;
  uint8_t wire_version_ = kWireVersionMin;
  uint8_t frame_wire_version_ = kWireVersionMin;
};

}  // namespace ts::rpc

// HttpPort's GET /v1/watch (http_port.h): a watch as a server-sent-events
// stream. The HTTP thread holds a client-port connection to this very node
// (over TLS with the node's own certificate) and turns each answer of the
// watch's stream into events:
//   event: change    data: one change (tsctl_format.h WatchEventJson), id: its slot
//                    (with deploy=true: deployment events of the objects the
//                    key or prefix names, "sched/NAME", "lrp/GUID", "bg/NAME")
//   event: progress  data: {"slot": S}: every change up to S was sent, id: S
//   event: end       data: {"code", "message", "slot"}: the stream's last
// A client that reconnects with the Last-Event-ID header resumes after that
// slot. At most kHttpWatchesMax watches at once, each holding one of the
// server's threads.
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <charconv>

#include "node/tsctl/tsctl_format.h"
#include "node/tsnode/http_api.h"
#include "node/tsnode/http_port.h"
#include "node/tsnode/http_range.h"
#include "rpc/client_connection.h"

namespace ts::tsnode {

namespace {

std::string Sse(const char* event, const nlohmann::json& data, uint64_t id) {
  std::string out = std::string("event: ") + event + "\n";
  if (id != 0) out += "id: " + std::to_string(id) + "\n";
  return out + "data: " + tsctl::DumpJson(data) + "\n\n";
}

std::optional<uint64_t> SlotParam(const std::string& text) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// One watch's stream, shared by the calls of the content provider.
struct HttpWatch {
  rpc::BlockingClient conn;
  bool ended = false;
  explicit HttpWatch(std::shared_ptr<rpc::TlsContext> tls) : conn(std::move(tls)) {}
};

}  // namespace

void HttpPort::ServeWatch(const httplib::Request& req, httplib::Response& res) {
  auto fail = [&res](rpc::ClientCode code, const std::string& why) {
    WriteAnswer(res, ErrorToHttp(code, why));
  };
  rpc::ClientRequest w;
  w.op = rpc::ClientOp::kWatch;
  const bool has_key = req.has_param("key"), has_prefix = req.has_param("prefix");
  if (has_key == has_prefix) {
    return fail(rpc::ClientCode::kBadRequest, "/v1/watch takes key=KEY or prefix=P (one of them)");
  }
  w.key = has_key ? req.get_param_value("key") : req.get_param_value("prefix");
  w.watch_prefix = has_prefix;
  auto param = [&req](const char* name) {
    return req.has_param(name) ? std::optional<std::string>(req.get_param_value(name)) : std::nullopt;
  };
  auto deploy = QueryFlag(param, "deploy");  // deployment events of the objects the key names, not keys
  if (!deploy.ok()) return fail(rpc::ClientCode::kBadRequest, deploy.status().message());
  w.watch_deploy = *deploy;
  w.from_slot = 0;
  if (req.has_param("from_slot")) {
    auto from = SlotParam(req.get_param_value("from_slot"));
    if (!from) return fail(rpc::ClientCode::kBadRequest, "from_slot must be a slot number");
    w.from_slot = *from;
  }
  if (req.has_header("Last-Event-ID")) {  // an event-source client reconnecting
    auto last = SlotParam(req.get_header_value("Last-Event-ID"));
    if (!last) return fail(rpc::ClientCode::kBadRequest, "Last-Event-ID must be a slot number");
    w.from_slot = *last + 1;
  }
  if (auto why = Denied(req, w.op)) return fail(rpc::ClientCode::kPermissionDenied, *why);
  if (watches_.fetch_add(1) >= kHttpWatchesMax) {
    --watches_;
    return fail(rpc::ClientCode::kBusy, "this HTTP port serves " + std::to_string(kHttpWatchesMax) +
                                            " watches at once; use the client port (tsctl watch) or wait");
  }
  auto watch = std::make_shared<HttpWatch>(node_tls_);
  auto first = watch->conn.Connect(watch_target_, std::chrono::milliseconds(1000));
  StatusOr<rpc::ClientResponse> answer = first.ok() ? watch->conn.StartStream(w, std::chrono::milliseconds(5000))
                                                    : StatusOr<rpc::ClientResponse>(first);
  if (!answer.ok() || !answer->stream_more) {
    --watches_;
    if (!answer.ok()) return fail(rpc::ClientCode::kUnavailable, answer.status().message());
    return WriteAnswer(res, AnswerToHttp(rpc::ClientOp::kWatch, *answer, nullptr));
  }
  const uint64_t first_slot = answer->slot;
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [watch, first_slot, sent_first = false](size_t, httplib::DataSink& sink) mutable {
        if (!sent_first) {
          sent_first = true;
          std::string hello = Sse("progress", {{"slot", first_slot}}, first_slot);
          return sink.write(hello.data(), hello.size());
        }
        if (watch->ended) {
          sink.done();
          return true;
        }
        auto r = watch->conn.NextInStream(std::chrono::milliseconds(1000));
        if (!r.ok() && r.status().code() == Status::Code::kTimeout) return sink.is_writable();
        std::string out;
        if (!r.ok() || !r->stream_more) {
          watch->ended = true;
          nlohmann::json end = r.ok() ? nlohmann::json{{"code", rpc::ClientCodeName(r->code)},
                                                        {"message", r->message},
                                                        {"slot", r->slot}}
                                      : nlohmann::json{{"code", "unavailable"}, {"message", r.status().message()}};
          out = Sse("end", end, 0);
        } else if (r->events.empty()) {
          out = Sse("progress", {{"slot", r->slot}}, r->slot);
        } else {
          for (size_t i = 0; i < r->events.size(); ++i) {
            // The id vouches for a whole slot: only its last change carries it.
            const rpc::WatchEvent& e = r->events[i];
            bool last_of_slot = i + 1 == r->events.size() || r->events[i + 1].slot != e.slot;
            out += Sse("change", tsctl::WatchEventJson(e), last_of_slot ? e.slot : 0);
          }
          if (r->events.back().slot < r->slot) out += Sse("progress", {{"slot", r->slot}}, r->slot);
        }
        return sink.write(out.data(), out.size());
      },
      [this, watch](bool) {
        watch->conn.Close();  // ends the watch on the node
        --watches_;
      });
}

}  // namespace ts::tsnode

// DigestWatch; see digest_watch.h.
#include "node/tsnode/digest_watch.h"

#include <spdlog/spdlog.h>

#include "rpc/transport.h"

namespace ts::tsnode {

std::vector<DigestMismatch> CompareCheckpoints(consensus::NodeId peer, const std::vector<rpc::DigestCheckpoint>& ours,
                                               const std::vector<rpc::DigestCheckpoint>& theirs) {
  std::map<uint64_t, const std::string*> mine;
  for (const rpc::DigestCheckpoint& c : ours) mine[c.slot] = &c.state_digest;
  std::vector<DigestMismatch> out;
  for (const rpc::DigestCheckpoint& c : theirs) {
    auto it = mine.find(c.slot);
    if (it != mine.end() && *it->second != c.state_digest) out.push_back({peer, c.slot, *it->second, c.state_digest});
  }
  return out;
}

DigestWatch::DigestWatch(asio::io_context& io, std::shared_ptr<rpc::TlsContext> tls, std::chrono::milliseconds period,
                         PeerAddrs peers, Ours ours, uint64_t* mismatches)
    : io_(io),
      tls_(std::move(tls)),
      period_(period),
      peer_addrs_(std::move(peers)),
      ours_(std::move(ours)),
      mismatches_(mismatches),
      timer_(io) {}

DigestWatch::~DigestWatch() { Stop(); }

void DigestWatch::Start() {
  timer_.expires_after(period_);
  timer_.async_wait([this, life = std::weak_ptr<char>(life_)](const std::error_code& ec) {
    if (ec || life.expired()) return;
    Round();
    Start();
  });
}

void DigestWatch::Stop() {
  timer_.cancel();
  for (auto& [id, p] : peers_) {
    if (p.client) p.client->Close();
  }
  peers_.clear();
}

void DigestWatch::Round() {
  auto addrs = peer_addrs_();
  for (auto it = peers_.begin(); it != peers_.end();) {
    it = addrs.count(it->first) ? std::next(it) : peers_.erase(it);  // no longer a member
  }
  for (const auto& [id, addr] : addrs) {
    Peer& p = peers_[id];
    if (p.addr != addr || !p.client) {
      p.addr = addr;
      p.client = std::make_unique<rpc::AsyncClient>(io_, rpc::kDefaultFrameBytesMax, tls_);
      p.connected = false;
      p.asking = false;
    }
    Ask(id, p);
  }
}

void DigestWatch::Ask(consensus::NodeId id, Peer& p) {
  if (p.asking) return;  // the last question is still out
  auto life = std::weak_ptr<char>(life_);
  rpc::AsyncClient* client = p.client.get();
  auto send = [this, id, life, client] {
    auto it = peers_.find(id);
    if (life.expired() || it == peers_.end() || it->second.client.get() != client) return;
    rpc::ClientRequest req;
    req.op = rpc::ClientOp::kStatus;
    it->second.asking = true;
    client->Send(req, [this, id, life, client](StatusOr<rpc::ClientResponse> r) {
      if (life.expired()) return;
      auto it = peers_.find(id);
      if (it == peers_.end() || it->second.client.get() != client) return;
      it->second.asking = false;
      if (!r.ok()) {
        it->second.connected = false;  // reconnect next round
        return;
      }
      if (r->code == rpc::ClientCode::kOk) Compare(id, r->status);
    });
  };
  if (p.connected) return send();
  auto hp = rpc::ParseHostPort(p.addr);
  if (!hp.ok()) return;
  p.asking = true;
  client->Connect(*hp, [this, id, life, client, send](Status s) {
    if (life.expired()) return;
    auto it = peers_.find(id);
    if (it == peers_.end() || it->second.client.get() != client) return;
    it->second.asking = false;
    it->second.connected = s.ok();
    if (s.ok()) send();
  });
}

void DigestWatch::Compare(consensus::NodeId id, const rpc::NodeStatus& theirs) {
  auto it = peers_.find(id);
  if (it == peers_.end()) return;
  for (const DigestMismatch& m : CompareCheckpoints(id, ours_(), theirs.digest_checkpoints)) {
    if (!it->second.reported.insert(m.slot).second) continue;
    ++*mismatches_;
    spdlog::error("state digests differ at slot {}: this node's is {}, node {}'s is {}. The two applied the same "
                  "decrees, so one state went wrong (a bug, a damaged disk, a bad binary); compare `tsctl status` "
                  "of every node, and rebuild the odd one out from an empty data dir (local-cluster.sh wipe)",
                  m.slot, m.ours, id, m.theirs);
  }
  while (it->second.reported.size() > 64) it->second.reported.erase(it->second.reported.begin());
}

}  // namespace ts::tsnode

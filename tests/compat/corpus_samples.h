// The compatibility corpus's samples: one value of every struct that
// crosses the wire or is stored, with every field set, named. The same
// header is compiled into tests/compat/corpus_gen.cc against a release's
// own sources (cluster-scripts/gen-compat-corpus.sh), which writes what
// that release encodes, and into compat_test.cc against today's, which
// decodes every release's files. So it names only fields that every
// release from 1.1.0 on has: fields are only ever appended, and a sample
// keeps the fields of the release that added it (a later field keeps its
// default here and is covered by the corpus of the release that added it).
#pragma once

#include <string>
#include <utility>

#include "consensus/messages.h"
#include "node/station/decree.h"
#include "node/station/snapshot.h"
#include "rpc/client_protocol.h"
#include "rpc/peer_protocol.h"

namespace ts::compat {

// Calls v.Message(name, m), v.Handshake(name, h), v.HandshakeAck(name, a),
// v.Request(name, r), v.Response(name, r) for the wire samples and
// v.Stored(name, value) for decree models and snapshot records (a
// station:: type, encoded by the station's own encoders).
template <class V>
void ForEachSample(V& v) {
  using namespace consensus;
  const Ballot b{7, 2};
  v.Message("msg-prepare", Message{1, 2, Prepare{{3, 1}, 5, {2, 3}, {{1, 7}, {2, 8}}}, 11});
  v.Message("msg-promise", Message{2, 1, Promise{{3, 1}, true, false, {3, 1}, 4, {{5, {2, 2}, "v"}}, 6, false, 2}, 12});
  v.Message("msg-accept", Message{1, 3, Accept{b, {{10, b, "hello"}, {11, b, ""}}, 9}, 13});
  v.Message("msg-accepted", Message{3, 1, Accepted{b, true, b, 10, 11}, 14});
  v.Message("msg-heartbeat", Message{1, 2, Heartbeat{b, 99, 11, "1.1.0"}, 15});
  v.Message("msg-heartbeat-ack", Message{2, 1, HeartbeatAck{b, true, b, 99, 11, "1.1.0"}, 16});
  v.Message("msg-catchup-request", Message{2, 1, CatchupRequest{b, 3}, 17});
  v.Message("msg-catchup-reply", Message{1, 2, CatchupReply{b, {{3, {1, 1}, "c"}}, 3, 2}, 18});
  v.Message("msg-timeout-now", Message{1, 2, TimeoutNow{b}, 19});
  v.Message("msg-snapshot-request", Message{2, 1, SnapshotRequest{40, 4096, 30}, 20});
  v.Message("msg-snapshot-chunk", Message{1, 2, SnapshotChunk{40, 4096, 10000, "chunk"}, 21});
  v.Message("msg-prevote", Message{3, 1, PreVote{{4, 3}, {{1, 7}, {3, 9}}}, 22});
  v.Message("msg-prevote-reply", Message{1, 3, PreVoteReply{{4, 3}, true, {3, 1}}, 23});

  rpc::Handshake h;
  h.cluster_id = "cluster-a";
  h.node_id = 3;
  h.software_version = "1.1.0";
  h.client_addr = "127.0.0.1:7003";
  h.format_versions = {1, 2};
  h.cluster_uuid = "5f0c6a1e-0000-4000-8000-000000000001";
  h.incarnation = 0x1122334455667788;
  v.Handshake("handshake", h);
  rpc::HandshakeAck a;
  a.ok = false;
  a.reason = "not a member";
  a.node_id = 2;
  a.software_version = "1.1.0";
  a.cluster_uuid = h.cluster_uuid;
  a.incarnation = 9;
  v.HandshakeAck("handshake-ack", a);

  rpc::ClientRequest r;
  r.id = 77;
  r.op = rpc::ClientOp::kCas;
  r.key = "key";
  r.value = "new";
  r.expected = "old";
  r.expected_absent = true;
  r.from_slot = 12;
  r.limit = 5;
  r.offset = 4096;
  v.Request("request-cas", r);

  rpc::ClientResponse w;
  w.id = 77;
  w.code = rpc::ClientCode::kNotLeader;
  w.message = "not the leader";
  w.leader_hint = "127.0.0.1:7002";
  w.slot = 40;
  w.found = true;
  w.value = "val";
  w.log = {rpc::LogRow{1, "put", 30, "put k1"}, rpc::LogRow{2, "noop", 0, ""}};
  w.total = 123;
  v.Response("response-plain", w);
  rpc::ClientResponse st;
  st.id = 78;
  rpc::NodeStatus& s = st.status;
  s.id = 1;
  s.role = "leader";
  s.ballot = {4, 1};
  s.leader = 1;
  s.leader_client_addr = "127.0.0.1:7001";
  s.chosen_slot = 40;
  s.applied_slot = 39;
  s.last_slot = 41;
  s.lease_left_ms = 80;
  s.software_version = "1.1.0";
  s.cluster_id = "cluster-a";
  s.log_digest = "abcd";
  s.keys = 5;
  rpc::PeerStatus p;
  p.id = 2;
  p.peer_addr = "127.0.0.1:6002";
  p.connected = true;
  p.software_version = "1.1.0";
  p.last_heard_ms_ago = 15;
  p.refusals = 1;
  p.last_refusal = "another cluster";
  s.peers = {p};
  s.latest_marker = "1.1.0";
  s.kv_write_model = 2;
  s.eligible = true;
  s.state_digest = "ef01";
  s.coordinator = true;
  s.cluster_uuid = h.cluster_uuid;
  s.incarnation = 3;
  s.voter = true;
  rpc::MemberStatus m;
  m.id = 2;
  m.voter = true;
  m.incarnation = 4;
  m.peer_addr = "127.0.0.1:6002";
  m.heard = true;
  m.match = 39;
  m.note = "caught up";
  s.members = {m};
  s.snapshot_slot = 30;
  s.snapshot_bytes = 1000;
  s.counters.proposals = 7;
  s.counters.fsync_seconds = rpc::Histogram({0.001, 0.01});
  s.counters.fsync_seconds.Observe(0.002);
  s.digest_checkpoints = {rpc::DigestCheckpoint{30, "aa"}};
  v.Response("response-status", st);

  station::Decree d;
  d.header.type = static_cast<uint16_t>(station::DecreeType::kKvPut);
  d.header.model_version = 2;
  d.header.min_reader_version = "1.1.0";
  d.tag = station::RequestTag{1, 2, 3};
  d.payload = "payload";
  v.Stored("decree", d);
  v.Stored("kv-command", station::KvCommand{"k", "v", "e", true});
  station::KvBatch batch;
  batch.ops = {station::KvOp{static_cast<uint16_t>(station::DecreeType::kKvPut), {"k1", "v1", "", false}},
               station::KvOp{static_cast<uint16_t>(station::DecreeType::kKvDelete), {"k2", "", "", false}}};
  v.Stored("kv-batch", batch);
  v.Stored("version-marker", station::VersionMarker{"1.1.0"});
  station::Downgrade dg;
  dg.target = "1.0.0";
  dg.rewrites = {station::Rewrite{5, "restated"}};
  v.Stored("downgrade", dg);
  station::MembershipDecree md;
  md.cluster_uuid = h.cluster_uuid;
  md.members = {station::MemberRecord{1, 0, true, "127.0.0.1:6001"}, station::MemberRecord{4, 9, false, "h:6004"}};
  md.change = "add 4 as a learner";
  v.Stored("membership", md);
  station::SnapshotHeader sh;
  sh.slot = 30;
  sh.log_digest = 0xabcdef;
  sh.state_digest = "sd";
  sh.full_digest = "fd";
  sh.cluster_uuid = h.cluster_uuid;
  sh.cluster_id = "cluster-a";
  sh.written_by = "1.1.0";
  sh.models = {{1, 2}, {201, 1}};
  sh.min_reader_version = "1.1.0";
  sh.kv_keys = 5;
  v.Stored("snapshot-header", sh);
}

}  // namespace ts::compat

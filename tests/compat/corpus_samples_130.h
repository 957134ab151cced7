// The compatibility corpus's samples of what release 1.3.0 added: wire
// version 3's request and answer fields (sessions, leases, transactions,
// ranges, watches) and the decrees of sessions, leases and transactions.
// Like corpus_samples.h, but compiled only against releases from 1.3.0 on:
// cluster-scripts/gen-compat-corpus.sh copies it into a release's sources
// only for those, corpus_gen.cc includes it when it is there, and
// compat_test.cc checks these samples in the corpus of every release from
// 1.3.0 on. It names only fields that 1.3.0 has; a later release's fields
// go in a header of their own.
#pragma once

#include <string>

#include "node/station/decree.h"
#include "rpc/client_protocol.h"

namespace ts::compat {

// The same visitor as ForEachSample (Request, Response, Stored).
template <class V>
void ForEachSampleSince130(V& v) {
  rpc::Txn txn;
  txn.compares = {rpc::TxnCompare{"k1", rpc::TxnCompare::Target::kValue, rpc::TxnCompare::Op::kLess, "m", true, 0},
                  rpc::TxnCompare{"k2", rpc::TxnCompare::Target::kModSlot, rpc::TxnCompare::Op::kGreater, "", false, 9}};
  txn.then_ops = {rpc::TxnOp{rpc::TxnOp::Kind::kPut, "k1", "v1", 31}, rpc::TxnOp{rpc::TxnOp::Kind::kGet, "k2", "", 0}};
  txn.else_ops = {rpc::TxnOp{rpc::TxnOp::Kind::kDelete, "k3", "", 0}};

  rpc::ClientRequest put;
  put.id = 81;
  put.op = rpc::ClientOp::kPut;
  put.key = "key";
  put.value = "val";
  put.session = 40;
  put.seq = 3;
  put.lowest_pending = 2;
  put.lease = 31;
  v.Request("request-session-put", put);

  rpc::ClientRequest t;
  t.id = 82;
  t.op = rpc::ClientOp::kTxn;
  t.txn = txn;
  t.ttl_ms = 5000;
  v.Request("request-txn", t);

  rpc::ClientRequest range;
  range.id = 83;
  range.op = rpc::ClientOp::kRange;
  range.key = "pre/";
  range.limit = 50;
  range.after = "00ab";
  range.range_flags = rpc::kRangeKeysOnly | rpc::kRangeSerializable;
  v.Request("request-range", range);

  rpc::ClientRequest watch;
  watch.id = 84;
  watch.op = rpc::ClientOp::kWatch;
  watch.key = "sched/";
  watch.from_slot = 17;
  watch.watch_prefix = true;
  watch.watch_id = 12;
  watch.watch_deploy = true;
  v.Request("request-watch", watch);

  rpc::ClientResponse r;
  r.id = 85;
  r.code = rpc::ClientCode::kCompacted;
  r.message = "compacted";
  r.slot = 60;
  r.found = true;
  r.value = "val";
  r.node_version = "1.3.0";
  r.wire_version_min = 1;
  r.wire_version_max = 3;
  r.mod_slot = 55;
  r.lease = 31;
  r.ttl_ms = 5000;
  r.leases = {rpc::LeaseInfo{31, 5000, 4200, 2}};
  r.txn_succeeded = true;
  r.txn_results = {rpc::TxnOpResult{true, "v2", 44, 0}, rpc::TxnOpResult{}};
  r.range = {rpc::RangeEntry{"pre/a", "1", 50, 0}, rpc::RangeEntry{"pre/b", "", 51, 31}};
  r.range_after = "00cd";
  r.range_flags = rpc::kRangeMore;
  r.stream_more = true;
  r.events = {rpc::WatchEvent{58, rpc::WatchEvent::Kind::kPut, "pre/a", "1", 58, 0},
              rpc::WatchEvent{59, rpc::WatchEvent::Kind::kDeploy, "sched/s", "", 0, 0}};
  v.Response("response-wire3", r);

  v.Stored("session-open", station::SessionOpen{30000});
  v.Stored("session-write", station::SessionWrite{40, 300, 299, static_cast<uint16_t>(station::DecreeType::kKvPut),
                                                  2, "payload"});
  v.Stored("txn", txn);
  v.Stored("lease-grant", station::LeaseGrant{5000});
  v.Stored("id-list", station::IdList{{31, 32, 1u << 20}});
}

}  // namespace ts::compat

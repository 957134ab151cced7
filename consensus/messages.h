// Messages exchanged between replicas. The core consumes and produces these;
// rpc/ frames and encodes them. Every field that is a length (vectors,
// strings) is bounded by the decoder, never trusted.
//
// Protocol summary (docs/design/consensus.md):
//   Prepare/Promise      phase 1, once per leadership, chunked by bytes
//   Accept/Accepted      phase 2, pipelined, batched, carries the commit mark
//   Heartbeat/Ack        lease renewal, version broadcast, commit mark
//   CatchupRequest/Reply chosen entries for a lagging replica
//   SnapshotRequest/Chunk a snapshot, by byte ranges, for a replica behind
//                        the sender's compaction point (the station serves
//                        these: the core only says when one is needed)
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "consensus/types.h"

namespace ts::consensus {

struct Prepare {
  Ballot ballot;
  Slot from_slot = 1;  // first slot the candidate does not know to be chosen
  // Set when the leader of this ballot handed leadership to the candidate
  // (TimeoutNow): it gave up its lease first, so acceptors that follow it
  // need not wait for the lease to run out.
  Ballot transfer_from;
  // The voters (id, incarnation) whose promises the candidate counts: a
  // node not (yet) sure it votes answers if it is among them (a promoted
  // learner that has not seen the decree promoting it).
  std::vector<std::pair<NodeId, uint64_t>> electorate;

  template <class A>
  void serialize(A& ar) { ar(ballot, from_slot, transfer_from, electorate); }
};

// Reply to Prepare. ok=false: `promised` is the higher ballot that refused
// (or, with lease_refusal, the acceptor is still bound to a live leader).
// ok=true: accepted entries with slot >= the request's from_slot, at most a
// byte cap of them; `done` is false when more follow from `next_slot` (the
// candidate asks again with the same ballot). Entries with slot <=
// chosen_upto are chosen at this acceptor.
struct Promise {
  Ballot ballot;
  bool ok = false;
  bool lease_refusal = false;
  Ballot promised;
  Slot chosen_upto = 0;
  std::vector<Entry> entries;
  Slot next_slot = 0;
  bool done = true;
  // Nonzero: this acceptor has compacted its log up to here, and the
  // request's from_slot is not above it. Those slots are chosen, but their
  // values are only in the acceptor's snapshot: the candidate cannot
  // complete phase 1 before it installs one.
  Slot snapshot_upto = 0;

  template <class A>
  void serialize(A& ar) { ar(ballot, ok, lease_refusal, promised, chosen_upto, entries, next_slot, done, snapshot_upto); }
};

// Phase 2 for a run of slots at one ballot. Entries carry slot and value; the
// ballot of each is the message ballot. commit_upto: every slot up to it is
// chosen, and for those the value is the one this ballot's leader proposed.
struct Accept {
  Ballot ballot;
  std::vector<Entry> entries;
  Slot commit_upto = 0;

  template <class A>
  void serialize(A& ar) { ar(ballot, entries, commit_upto); }
};

// Reply to Accept, sent only once the accepted entries are durable.
// ok=true acknowledges every slot in [first_slot, last_slot] at `ballot`.
struct Accepted {
  Ballot ballot;
  bool ok = false;
  Ballot promised;
  Slot first_slot = 0;
  Slot last_slot = 0;

  template <class A>
  void serialize(A& ar) { ar(ballot, ok, promised, first_slot, last_slot); }
};

// Lease renewal and liveness from the leader; carries the software version
// (for the version view) and the commit mark. seq identifies the send time at
// the leader, which the lease runs from.
struct Heartbeat {
  Ballot ballot;
  uint64_t seq = 0;
  Slot commit_upto = 0;
  std::string software_version;

  template <class A>
  void serialize(A& ar) { ar(ballot, seq, commit_upto, software_version); }
};

struct HeartbeatAck {
  Ballot ballot;
  bool ok = false;
  Ballot promised;
  uint64_t seq = 0;
  // The follower's own chosen prefix, as far as it is written (a lower
  // mark than it knows chosen is always true: what a leader's flow control
  // and retransmission take as held).
  Slot chosen_upto = 0;
  std::string software_version;

  template <class A>
  void serialize(A& ar) { ar(ballot, ok, promised, seq, chosen_upto, software_version); }
};

struct CatchupRequest {
  Ballot ballot;
  Slot from_slot = 0;

  template <class A>
  void serialize(A& ar) { ar(ballot, from_slot); }
};

// Chosen entries starting at the request's from_slot, at most a byte cap.
// snapshot_upto nonzero: the request's from_slot is compacted away here;
// the requester needs a snapshot of at least that slot.
struct CatchupReply {
  Ballot ballot;
  std::vector<Entry> entries;
  Slot commit_upto = 0;
  Slot snapshot_upto = 0;

  template <class A>
  void serialize(A& ar) { ar(ballot, entries, commit_upto, snapshot_upto); }
};

// A byte range of the sender's snapshot: `slot` 0 asks for the newest one.
// Pull-based, one range in flight, so memory stays bounded on both sides and
// a transfer that breaks off resumes at `offset`.
// at_least: a snapshot of an older slot is of no use to the asker; the
// sender then answers with its newest slot and no data.
struct SnapshotRequest {
  Slot slot = 0;
  uint64_t offset = 0;
  Slot at_least = 0;

  template <class A>
  void serialize(A& ar) { ar(slot, offset, at_least); }
};

// Bytes [offset, offset + data.size()) of the snapshot of `slot`, whose file
// is total_bytes long. slot 0: the sender has no snapshot to give. A
// request for a slot the sender no longer holds is answered with the newest
// one from offset 0.
struct SnapshotChunk {
  Slot slot = 0;
  uint64_t offset = 0;
  uint64_t total_bytes = 0;
  std::string data;

  template <class A>
  void serialize(A& ar) { ar(slot, offset, total_bytes, data); }
};

// A leader that leaves (it was removed from the configuration) asks its most
// caught-up voter to campaign now rather than after the lease.
struct TimeoutNow {
  Ballot ballot;  // the leaving leader's

  template <class A>
  void serialize(A& ar) { ar(ballot); }
};

// Pre-vote: before a node campaigns (raising its own promise, which makes a
// leader that hears of it re-run phase 1), it asks the voters whether they
// would promise it now. An acceptor says yes only when it has not heard a
// leader within the lease (the very check a Prepare meets) and does not
// refuse the candidate. Asking changes nothing at either end, so a node that
// was cut off, paused or starved cannot depose a leader a majority still
// hears: it campaigns only once a majority of every configuration it knows
// says yes.
struct PreVote {
  Ballot ballot;  // the ballot the sender would campaign with
  // As in Prepare: the voters whose answers the sender counts.
  std::vector<std::pair<NodeId, uint64_t>> electorate;

  template <class A>
  void serialize(A& ar) { ar(ballot, electorate); }
};

struct PreVoteReply {
  Ballot ballot;  // the PreVote's
  bool granted = false;
  Ballot promised;  // the acceptor's promise (a higher round to campaign above)

  template <class A>
  void serialize(A& ar) { ar(ballot, granted, promised); }
};

using MessageBody = std::variant<Prepare, Promise, Accept, Accepted, Heartbeat, HeartbeatAck,
                                 CatchupRequest, CatchupReply, TimeoutNow, SnapshotRequest, SnapshotChunk,
                                 PreVote, PreVoteReply>;

struct Message {
  NodeId from = kNoNode;
  NodeId to = kNoNode;
  MessageBody body;
  // The sender's incarnation (its acceptor state's identity): a vote counts
  // only if the configuration binds this incarnation to `from`.
  uint64_t incarnation = 0;

  template <class A>
  void serialize(A& ar) { ar(from, to, incarnation, body); }
};

const char* MessageName(const MessageBody& body);

inline const char* MessageName(const MessageBody& body) {
  static constexpr const char* kNames[] = {"Prepare",   "Promise",      "Accept",         "Accepted",
                                           "Heartbeat", "HeartbeatAck", "CatchupRequest", "CatchupReply",   "TimeoutNow",
                                           "SnapshotRequest", "SnapshotChunk", "PreVote", "PreVoteReply"};
  return kNames[body.index()];
}

}  // namespace ts::consensus

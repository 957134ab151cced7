// History encoding; see history.h.
#include "tests/nemesis/history.h"

#include <cassert>
#include <fstream>
#include <nlohmann/json.hpp>

namespace ts::nemesis {
namespace {

using Kind = sim::KvOperation::Kind;
using nlohmann::json;

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kPut: return "put";
    case Kind::kGet: return "get";
    case Kind::kCas: return "cas";
    case Kind::kDelete: return "delete";
    case Kind::kTxn: return "txn";  // never in the register history (txn_lease_clients.h keeps its own)
  }
  return "?";
}

std::optional<Kind> KindFrom(const std::string& s) {
  if (s == "put") return Kind::kPut;
  if (s == "get") return Kind::kGet;
  if (s == "cas") return Kind::kCas;
  if (s == "delete") return Kind::kDelete;
  return std::nullopt;
}

std::optional<Outcome> OutcomeFrom(const std::string& s) {
  for (Outcome o : {Outcome::kOk, Outcome::kNegative, Outcome::kUnknown, Outcome::kNotApplied}) {
    if (s == OutcomeName(o)) return o;
  }
  return std::nullopt;
}

}  // namespace

const char* OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kOk: return "ok";
    case Outcome::kNegative: return "negative";
    case Outcome::kUnknown: return "unknown";
    case Outcome::kNotApplied: return "not_applied";
  }
  return "?";
}

std::string EncodeOp(const HistoryOp& op) {
  json j;
  j["client"] = op.client;
  j["op"] = KindName(op.kind);
  j["key"] = op.key;
  if (op.kind == Kind::kPut || op.kind == Kind::kCas) j["value"] = op.value;
  if (op.kind == Kind::kCas) {
    if (op.expected_absent) j["expected_absent"] = true;
    else j["expected"] = op.expected;
  }
  j["outcome"] = OutcomeName(op.outcome);
  if (op.kind == Kind::kGet && op.outcome == Outcome::kOk) j["result"] = op.result;
  j["call_ns"] = op.call_ns;
  if (op.outcome != Outcome::kUnknown) j["return_ns"] = op.return_ns;
  if (op.fresh) j["fresh"] = true;
  if (op.final_read) j["final"] = true;
  if (!op.error.empty()) j["error"] = op.error;
  // Values are ours (ASCII), but a node could hand back any bytes: replace
  // invalid UTF-8 rather than throw.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

StatusOr<HistoryOp> DecodeOp(const std::string& line) {
  json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::InvalidArgument("not a JSON object: " + line.substr(0, 80));
  HistoryOp op;
  try {
    op.client = j.at("client").get<uint64_t>();
    auto kind = KindFrom(j.at("op").get<std::string>());
    if (!kind) return Status::InvalidArgument("unknown op in: " + line.substr(0, 80));
    op.kind = *kind;
    op.key = j.at("key").get<std::string>();
    if (op.key.empty()) return Status::InvalidArgument("empty key in: " + line.substr(0, 80));
    if (op.kind == Kind::kPut || op.kind == Kind::kCas) op.value = j.at("value").get<std::string>();
    if (op.kind == Kind::kCas) {
      op.expected_absent = j.value("expected_absent", false);
      if (!op.expected_absent) op.expected = j.at("expected").get<std::string>();
    }
    auto outcome = OutcomeFrom(j.at("outcome").get<std::string>());
    if (!outcome) return Status::InvalidArgument("unknown outcome in: " + line.substr(0, 80));
    op.outcome = *outcome;
    if (op.kind == Kind::kGet && op.outcome == Outcome::kOk) op.result = j.at("result").get<std::string>();
    op.call_ns = j.at("call_ns").get<uint64_t>();
    if (op.outcome != Outcome::kUnknown) {
      op.return_ns = j.at("return_ns").get<uint64_t>();
      if (op.return_ns < op.call_ns) return Status::InvalidArgument("return before call in: " + line.substr(0, 80));
    } else if (j.contains("return_ns")) {
      return Status::InvalidArgument("unknown outcome with a return time in: " + line.substr(0, 80));
    }
    op.fresh = j.value("fresh", false);
    op.final_read = j.value("final", false);
    op.error = j.value("error", std::string());
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("bad field (") + e.what() + ") in: " + line.substr(0, 80));
  }
  return op;
}

StatusOr<std::vector<HistoryOp>> ReadHistory(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::IoError("cannot open " + path);
  std::vector<HistoryOp> out;
  size_t line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.empty() || line.rfind("{\"meta\"", 0) == 0) continue;
    auto op = DecodeOp(line);
    if (!op.ok()) return Status::InvalidArgument(path + ":" + std::to_string(line_no) + ": " + op.status().message());
    out.push_back(std::move(*op));
  }
  return out;
}

bool RecordAnswer(const StatusOr<rpc::ClientResponse>& r, HistoryOp& op) {
  const bool write = op.kind != Kind::kGet;
  if (!r.ok()) {
    // The client returns an error only when no attempt was applied: every
    // node answered "nothing proposed" or "not applied", or none was
    // reached. A read without an answer constrains nothing.
    op.error = r.status().message();
    op.outcome = Outcome::kNotApplied;
    return true;
  }
  switch (r->code) {
    case rpc::ClientCode::kOk:
      op.outcome = Outcome::kOk;
      if (!write) op.result = r->value;
      return true;
    case rpc::ClientCode::kNotFound:       // get, delete: no such key
    case rpc::ClientCode::kCompareFailed:  // cas
      op.outcome = Outcome::kNegative;
      return true;
    case rpc::ClientCode::kOutcomeUnknown:
      op.error = std::string(rpc::ClientCodeName(r->code)) + ": " + r->message;
      op.outcome = write ? Outcome::kUnknown : Outcome::kNotApplied;
      return true;
    default:
      // Bad request or internal error: not expected from this workload. A
      // write's decree may still have been chosen, so its outcome is
      // unknown.
      op.error = std::string(rpc::ClientCodeName(r->code)) + ": " + r->message;
      op.outcome = write ? Outcome::kUnknown : Outcome::kNotApplied;
      return false;
  }
}

std::optional<sim::KvOperation> ToCheckerOp(const HistoryOp& op) {
  if (op.outcome == Outcome::kNotApplied) return std::nullopt;
  sim::KvOperation k;
  k.kind = op.kind;
  k.key = op.key;
  k.value = op.value;
  k.expected = op.expected;
  k.expected_absent = op.expected_absent;
  k.call_ns = op.call_ns;
  k.client = op.client;
  if (op.outcome != Outcome::kUnknown) {
    assert(op.return_ns >= op.call_ns);
    k.return_ns = op.return_ns;
    k.ok = op.outcome == Outcome::kOk;
    k.result = op.result;
  }
  return k;
}

}  // namespace ts::nemesis

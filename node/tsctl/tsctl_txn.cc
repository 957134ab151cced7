// tsctl lease and tsctl txn; see tsctl_txn.h.
#include "node/tsctl/tsctl_txn.h"

#include <charconv>
#include <fstream>
#include <iostream>
#include <iterator>
#include <thread>

namespace ts::tsctl {

using rpc::ClientCode;
using rpc::ClientOp;
using rpc::TxnCompare;
using rpc::TxnOp;

namespace {

StatusOr<TxnCompare::Op> OpOf(std::string_view s) {
  if (s == "=" || s == "==") return TxnCompare::Op::kEqual;
  if (s == "!=") return TxnCompare::Op::kNotEqual;
  if (s == "<") return TxnCompare::Op::kLess;
  if (s == ">") return TxnCompare::Op::kGreater;
  return Status::InvalidArgument("unknown comparison '" + std::string(s) + "': one of = != < >");
}

StatusOr<uint64_t> SlotOf(std::string_view s) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) {
    return Status::InvalidArgument("'" + std::string(s) + "' is not a slot number");
  }
  return v;
}

StatusOr<std::string> KeyField(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("key") || !j["key"].is_string() || j["key"].get<std::string>().empty()) {
    return Status::InvalidArgument("every compare and operation needs a \"key\" (a non-empty string)");
  }
  return j["key"].get<std::string>();
}

StatusOr<TxnOp> OpFromJson(const nlohmann::json& j) {
  if (!j.is_object() || j.size() != 1) {
    return Status::InvalidArgument("an operation is {\"put\": {...}}, {\"delete\": {...}} or {\"get\": {...}}");
  }
  // Through the object's own iterator: items() makes a temporary whose
  // element a reference would outlive.
  const auto first = j.begin();
  const std::string& kind = first.key();
  const nlohmann::json& body = first.value();
  TxnOp op;
  auto key = KeyField(body);
  if (!key.ok()) return key.status();
  op.key = std::move(*key);
  if (kind == "put") {
    op.kind = TxnOp::Kind::kPut;
    auto value = BytesField(body, "value", true);
    if (!value.ok()) return value.status();
    op.value = std::move(*value);
    if (body.contains("lease")) {
      if (!body["lease"].is_number_unsigned()) return Status::InvalidArgument("\"lease\" must be a lease id");
      op.lease = body["lease"].get<uint64_t>();
    }
  } else if (kind == "delete") {
    op.kind = TxnOp::Kind::kDelete;
  } else if (kind == "get") {
    op.kind = TxnOp::Kind::kGet;
  } else {
    return Status::InvalidArgument("unknown operation \"" + kind + "\": put, delete or get");
  }
  return op;
}

StatusOr<TxnCompare> CompareFromJson(const nlohmann::json& j) {
  TxnCompare c;
  auto key = KeyField(j);
  if (!key.ok()) return key.status();
  c.key = std::move(*key);
  if (j.contains("op")) {
    if (!j["op"].is_string()) return Status::InvalidArgument("\"op\" must be one of = != < >");
    auto op = OpOf(j["op"].get<std::string>());
    if (!op.ok()) return op.status();
    c.op = *op;
  }
  int targets = 0;
  if (j.contains("exists")) {
    if (!j["exists"].is_boolean()) return Status::InvalidArgument("\"exists\" must be true or false");
    c.target = TxnCompare::Target::kExists;
    c.exists = j["exists"].get<bool>();
    ++targets;
  }
  if (j.contains("mod_slot")) {
    if (!j["mod_slot"].is_number_unsigned()) return Status::InvalidArgument("\"mod_slot\" must be a slot number");
    c.target = TxnCompare::Target::kModSlot;
    c.slot = j["mod_slot"].get<uint64_t>();
    ++targets;
  }
  if (j.contains("value") || j.contains("value_base64")) {
    auto value = BytesField(j, "value", true);
    if (!value.ok()) return value.status();
    c.target = TxnCompare::Target::kValue;
    c.value = std::move(*value);
    ++targets;
  }
  if (targets != 1) {
    return Status::InvalidArgument("a compare names exactly one of \"value\", \"exists\" and \"mod_slot\"");
  }
  return c;
}

nlohmann::json ResultJson(const TxnOp& op, const rpc::TxnOpResult& r) {
  nlohmann::json j = {{"op", op.kind == TxnOp::Kind::kPut ? "put" : op.kind == TxnOp::Kind::kDelete ? "delete" : "get"},
                      {"key", op.key}};
  if (op.kind == TxnOp::Kind::kPut) return j;
  j["found"] = r.found;
  if (op.kind == TxnOp::Kind::kGet && r.found) {
    SetBytes(j, "value", r.value);
    j["mod_slot"] = r.mod_slot;
    if (r.lease != 0) j["lease"] = r.lease;
  }
  return j;
}

}  // namespace

StatusOr<TxnCompare> ParseCompareText(const std::string& text) {
  auto open = text.find('(');
  auto close = text.find(')', open == std::string::npos ? 0 : open);
  if (open == std::string::npos || close == std::string::npos || close == open + 1) {
    return Status::InvalidArgument("compare '" + text +
                                   "': write value(KEY) OP VALUE, mod(KEY) OP SLOT, exists(KEY) or absent(KEY)");
  }
  TxnCompare c;
  std::string what = text.substr(0, open);
  c.key = text.substr(open + 1, close - open - 1);
  std::string rest = text.substr(close + 1);
  auto first = rest.find_first_not_of(' ');
  rest = first == std::string::npos ? "" : rest.substr(first);
  if (what == "exists" || what == "absent") {
    if (!rest.empty()) return Status::InvalidArgument("compare '" + text + "': " + what + "(KEY) takes nothing after it");
    c.target = TxnCompare::Target::kExists;
    c.exists = what == "exists";
    return c;
  }
  if (what != "value" && what != "mod") {
    return Status::InvalidArgument("compare '" + text + "': value(KEY), mod(KEY), exists(KEY) or absent(KEY)");
  }
  auto space = rest.find(' ');
  if (space == std::string::npos) {
    return Status::InvalidArgument("compare '" + text + "': " + what + "(KEY) OP " +
                                   (what == "mod" ? "SLOT" : "VALUE") + ", with spaces around OP");
  }
  auto op = OpOf(rest.substr(0, space));
  if (!op.ok()) return Status::InvalidArgument("compare '" + text + "': " + op.status().message());
  c.op = *op;
  std::string operand = rest.substr(space + 1);
  if (what == "value") {
    c.target = TxnCompare::Target::kValue;
    c.value = std::move(operand);
  } else {
    auto slot = SlotOf(operand);
    if (!slot.ok()) return Status::InvalidArgument("compare '" + text + "': " + slot.status().message());
    c.target = TxnCompare::Target::kModSlot;
    c.slot = *slot;
  }
  return c;
}

StatusOr<TxnOp> ParseOpText(const std::string& text) {
  auto space = text.find(' ');
  std::string kind = text.substr(0, space);
  std::string rest = space == std::string::npos ? "" : text.substr(space + 1);
  TxnOp op;
  if (kind == "put") {
    auto s = rest.find(' ');
    if (s == std::string::npos || s == 0) return Status::InvalidArgument("operation '" + text + "': put KEY VALUE");
    op.kind = TxnOp::Kind::kPut;
    op.key = rest.substr(0, s);
    op.value = rest.substr(s + 1);
    return op;
  }
  if (kind != "delete" && kind != "get") {
    return Status::InvalidArgument("operation '" + text + "': put KEY VALUE, delete KEY or get KEY");
  }
  if (rest.empty() || rest.find(' ') != std::string::npos) {
    return Status::InvalidArgument("operation '" + text + "': " + kind + " KEY (one key, no spaces)");
  }
  op.kind = kind == "delete" ? TxnOp::Kind::kDelete : TxnOp::Kind::kGet;
  op.key = std::move(rest);
  return op;
}

StatusOr<rpc::Txn> TxnFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return Status::InvalidArgument("a transaction is a JSON object");
  for (const auto& [name, v] : j.items()) {
    if (name != "compare" && name != "then" && name != "else" && name != "session" && name != "seq" &&
        name != "lowest_pending") {
      return Status::InvalidArgument("unknown field \"" + name + "\" in a transaction: compare, then, else");
    }
  }
  rpc::Txn t;
  auto list = [&](const char* name) -> StatusOr<const nlohmann::json*> {
    if (!j.contains(name)) return nullptr;
    if (!j[name].is_array()) return Status::InvalidArgument(std::string("\"") + name + "\" must be a list");
    return &j[name];
  };
  auto compares = list("compare");
  if (!compares.ok()) return compares.status();
  if (*compares) {
    for (const auto& c : **compares) {
      auto parsed = CompareFromJson(c);
      if (!parsed.ok()) return parsed.status();
      t.compares.push_back(std::move(*parsed));
    }
  }
  for (auto [name, ops] : {std::pair{"then", &t.then_ops}, std::pair{"else", &t.else_ops}}) {
    auto l = list(name);
    if (!l.ok()) return l.status();
    if (!*l) continue;
    for (const auto& o : **l) {
      auto parsed = OpFromJson(o);
      if (!parsed.ok()) return parsed.status();
      ops->push_back(std::move(*parsed));
    }
  }
  if (t.empty()) return Status::InvalidArgument("an empty transaction: give \"compare\", \"then\" or \"else\"");
  return t;
}

StatusOr<rpc::Txn> TxnFromArgs(const TxnArgs& a) {
  if (!a.file.empty()) {
    if (!a.compares.empty() || !a.then_ops.empty() || !a.else_ops.empty()) {
      return Status::InvalidArgument("--file gives the whole transaction: no --if, --then or --else with it");
    }
    std::ifstream file;
    std::istream* in = &std::cin;
    if (a.file != "-") {
      file.open(a.file);
      if (!file) return Status::InvalidArgument("cannot read --file " + a.file);
      in = &file;
    }
    std::string text((std::istreambuf_iterator<char>(*in)), std::istreambuf_iterator<char>());
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded()) return Status::InvalidArgument("--file " + a.file + " is not JSON");
    auto t = TxnFromJson(j);
    if (!t.ok()) return Status::InvalidArgument("--file " + a.file + ": " + t.status().message());
    return t;
  }
  rpc::Txn t;
  for (const std::string& c : a.compares) {
    auto parsed = ParseCompareText(c);
    if (!parsed.ok()) return parsed.status();
    t.compares.push_back(std::move(*parsed));
  }
  for (auto [texts, ops] : {std::pair{&a.then_ops, &t.then_ops}, std::pair{&a.else_ops, &t.else_ops}}) {
    for (const std::string& o : *texts) {
      auto parsed = ParseOpText(o);
      if (!parsed.ok()) return parsed.status();
      if (parsed->kind == TxnOp::Kind::kPut) parsed->lease = a.lease;
      ops->push_back(std::move(*parsed));
    }
  }
  if (t.then_ops.empty() && t.else_ops.empty()) {
    return Status::InvalidArgument("a transaction needs at least one --then or --else operation");
  }
  return t;
}

nlohmann::json TxnAnswerJson(const rpc::Txn& txn, const rpc::ClientResponse& r) {
  const auto& ops = r.txn_succeeded ? txn.then_ops : txn.else_ops;
  nlohmann::json results = nlohmann::json::array();
  for (size_t i = 0; i < ops.size() && i < r.txn_results.size(); ++i) results.push_back(ResultJson(ops[i], r.txn_results[i]));
  return {{"succeeded", r.txn_succeeded}, {"slot", r.slot}, {"results", std::move(results)}};
}

nlohmann::json LeasesJson(const std::vector<rpc::LeaseInfo>& leases) {
  nlohmann::json out = nlohmann::json::array();
  for (const rpc::LeaseInfo& l : leases) {
    out.push_back({{"id", l.id}, {"ttl_ms", l.ttl_ms}, {"remaining_ms", l.remaining_ms}, {"keys", l.keys}});
  }
  return out;
}

void AddLeaseCommands(CLI::App& app, LeaseArgs* a) {
  CLI::App* lease = app.add_subcommand(
      "lease",
      "Leases: keys put with a lease are deleted when it is revoked or not kept alive within its TTL (the "
      "leader decides; a new leader gives every lease a whole TTL again)");
  lease->require_subcommand(1);
  CLI::App* grant = lease->add_subcommand("grant", "grant TTL: a new lease of TTL seconds; prints its id");
  grant->add_option("TTL", a->ttl_s, "Seconds (1..86400)")->required()->check(CLI::Range(uint64_t{1}, uint64_t{86400}));
  CLI::App* keep = lease->add_subcommand(
      "keepalive", "keepalive ID: restart the lease's TTL; exit 1 if it is gone (revoked or expired)");
  keep->add_option("ID", a->id, "Lease id")->required()->check(CLI::Range(uint64_t{1}, UINT64_MAX));
  keep->add_flag("--forever", a->forever,
                 "Keep it alive every TTL/3 until it is gone (exit 1) or tsctl is stopped; each keepalive gets "
                 "--timeout-ms");
  CLI::App* revoke = lease->add_subcommand("revoke", "revoke ID: end the lease now and delete its keys");
  revoke->add_option("ID", a->id, "Lease id")->required()->check(CLI::Range(uint64_t{1}, UINT64_MAX));
  lease->add_subcommand("list", "The live leases: id, TTL, time left by the leader's clock, keys attached");
}

std::string LeaseAction(const CLI::App& app) {
  const CLI::App* lease = app.get_subcommand("lease");
  if (lease->parsed() == 0) return "";
  for (const CLI::App* sub : lease->get_subcommands()) return sub->get_name();
  return "";
}

void AddTxnCommand(CLI::App& app, TxnArgs* a) {
  CLI::App* txn = app.add_subcommand(
      "txn",
      "A transaction, applied atomically as one decree: if every --if holds, the --then operations run, else the "
      "--else ones; prints the branch and each get's answer; exit 0 if the --if's held, 1 if the --else branch ran. "
      "Compares: 'value(KEY) OP VALUE', 'mod(KEY) OP SLOT' (the slot that last changed KEY; 0 if absent), "
      "'exists(KEY)', 'absent(KEY)'; OP is one of = != < >. Operations: 'put KEY VALUE', 'delete KEY', 'get KEY'. "
      "At most 128 compares and 128 operations per branch");
  txn->add_option("--if", a->compares, "A compare (repeatable)");
  txn->add_option("--then", a->then_ops, "An operation when every compare holds (repeatable)");
  txn->add_option("--else", a->else_ops, "An operation when one does not (repeatable)");
  txn->add_option("--lease", a->lease, "Attach the keys of every put to this lease");
  txn->add_option("--file", a->file,
                  "The whole transaction as JSON (- for stdin), the form POST /v1/txn takes: "
                  "{\"compare\":[{\"key\":K,\"value\":V|\"exists\":B|\"mod_slot\":N,\"op\":\"=\"}],"
                  "\"then\":[{\"put\":{\"key\":K,\"value\":V,\"lease\":ID}}|{\"delete\":{\"key\":K}}|"
                  "{\"get\":{\"key\":K}}],\"else\":[...]}");
}

int FailCallStatus(Output& out, const Status& s) {
  switch (s.code()) {
    case Status::Code::kInvalidArgument: return out.Fail(kExitUsage, s.message());
    case Status::Code::kIoError: return out.Fail(kExitError, s.message());  // tsctl's own files
    default: return out.Fail(kExitUnavailable, s.message());
  }
}

int FailAnswer(Output& out, const rpc::ClientResponse& r, const std::string& what) {
  // The exit code is the table's (ExitCodeOf); the codes here differ only
  // in their message and what the JSON adds.
  std::string message = std::string(rpc::ClientCodeName(r.code)) + ": " + r.message;
  nlohmann::json extra = nlohmann::json::object();
  switch (r.code) {
    case ClientCode::kNotFound:
      message = "not found: " + (r.message.empty() || r.message == "key not found" ? what : r.message);
      extra["found"] = false;
      break;
    case ClientCode::kBadRequest: message = "bad request: " + r.message; break;
    case ClientCode::kCompareFailed: message = "compare failed: " + r.message; break;
    case ClientCode::kOutcomeUnknown:
      // The write may or may not be applied: a script must read before it
      // retries, so the JSON says so in a field, not only in the text.
      message = "outcome unknown: " + r.message;
      extra["outcome_unknown"] = true;
      break;
    case ClientCode::kPermissionDenied: message = "permission denied: " + r.message; break;
    case ClientCode::kUnsupported:
      // Nothing was done: the node's release predates the op.
      message = r.message;
      extra = {{"unsupported", true}, {"node_version", r.node_version}};
      break;
    default: break;
  }
  return out.Fail(ExitCodeOf(r.code), message, std::move(extra));
}

int ExitCodeOf(ClientCode code) {
  switch (code) {
    case ClientCode::kOk: return kExitOk;
    case ClientCode::kNotFound:
    case ClientCode::kCompareFailed:
    case ClientCode::kCompacted:  // the cluster answered no: it no longer keeps that slot
      return kExitFailed;
    case ClientCode::kBadRequest: return kExitUsage;
    case ClientCode::kNotLeader:  // what is left after the redirects were followed
    case ClientCode::kUnavailable:
    case ClientCode::kBusy:
    case ClientCode::kOutcomeUnknown:
    case ClientCode::kSessionUnknown:  // the session expired (an outage longer than its timeout): nothing applied
      return kExitUnavailable;
    case ClientCode::kInternal: return kExitError;
    case ClientCode::kPermissionDenied: return kExitDenied;
    case ClientCode::kUnsupported: return kExitUnsupported;
  }
  return kExitError;  // a code from a newer node than this tsctl knows
}

int RunLease(client::Client& client, const LeaseArgs& a, Output& out) {
  rpc::ClientRequest req;
  const std::string what = "lease " + std::to_string(a.id);
  if (a.action == "grant") {
    req.op = ClientOp::kLeaseGrant;
    req.ttl_ms = a.ttl_s * 1000;
  } else if (a.action == "revoke") {
    req.op = ClientOp::kLeaseRevoke;
    req.lease = a.id;
  } else if (a.action == "list") {
    req.op = ClientOp::kLeaseList;
  } else {
    req.op = ClientOp::kLeaseKeepAlive;
    req.lease = a.id;
  }
  for (uint64_t kept = 0;; ++kept) {
    auto r = client.Call(req);
    if (!r.ok()) return FailCallStatus(out, r.status());
    if (r->code != ClientCode::kOk) return FailAnswer(out, *r, what);
    if (a.action == "grant") {
      out.Print({{"ok", true}, {"lease", r->lease}, {"ttl_ms", r->ttl_ms}, {"slot", r->slot}},
                "lease " + std::to_string(r->lease) + " granted, TTL " + std::to_string(r->ttl_ms / 1000) + " s");
      return kExitOk;
    }
    if (a.action == "revoke") {
      out.Print({{"ok", true}, {"lease", a.id}, {"slot", r->slot}},
                "lease " + std::to_string(a.id) + " revoked (slot " + std::to_string(r->slot) + ")");
      return kExitOk;
    }
    if (a.action == "list") {
      std::string text = "ID        TTL_S  LEFT_MS  KEYS";
      for (const rpc::LeaseInfo& l : r->leases) {
        char line[128];
        std::snprintf(line, sizeof line, "\n%-9llu %-6llu %-8llu %llu", static_cast<unsigned long long>(l.id),
                      static_cast<unsigned long long>(l.ttl_ms / 1000), static_cast<unsigned long long>(l.remaining_ms),
                      static_cast<unsigned long long>(l.keys));
        text += line;
      }
      out.Print({{"ok", true}, {"leases", LeasesJson(r->leases)}}, text);
      return kExitOk;
    }
    if (!a.forever) {
      out.Print({{"ok", true}, {"lease", a.id}, {"ttl_ms", r->ttl_ms}},
                "lease " + std::to_string(a.id) + " kept alive, TTL " + std::to_string(r->ttl_ms / 1000) + " s");
      return kExitOk;
    }
    if (kept == 0) out.Progress("keeping lease " + std::to_string(a.id) + " alive every " +
                                std::to_string(r->ttl_ms / 3) + " ms");
    std::this_thread::sleep_for(std::chrono::milliseconds(r->ttl_ms / 3));  // the keepalive period
  }
}

int RunTxn(client::Client& client, const TxnArgs& a, Output& out) {
  auto txn = TxnFromArgs(a);
  if (!txn.ok()) return out.Fail(kExitUsage, "bad arguments: " + txn.status().message());
  rpc::ClientRequest req;
  req.op = ClientOp::kTxn;
  req.txn = *txn;
  auto r = client.Call(std::move(req));
  if (!r.ok()) return FailCallStatus(out, r.status());
  if (r->code != ClientCode::kOk) return FailAnswer(out, *r, "transaction");
  nlohmann::json j = TxnAnswerJson(*txn, *r);
  std::string text = std::string(r->txn_succeeded ? "succeeded: the then branch ran" : "failed: the else branch ran") +
                     " (slot " + std::to_string(r->slot) + ")";
  for (const auto& res : j["results"]) {
    text += "\n" + res["op"].get<std::string>() + " " + Printable(res["key"].get<std::string>());
    if (res["op"] == "get") {
      text += res["found"].get<bool>() ? ": " + Printable(res["value"].get<std::string>()) + " (slot " +
                                             std::to_string(res["mod_slot"].get<uint64_t>()) + ")"
                                       : ": not found";
    } else if (res["op"] == "delete" && !res["found"].get<bool>()) {
      text += ": was absent";
    }
  }
  j["ok"] = true;
  out.Print(j, text);
  return r->txn_succeeded ? kExitOk : kExitFailed;
}

}  // namespace ts::tsctl

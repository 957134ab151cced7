// tsctl get --prefix: range reads, page by page; see tsctl_range.h.
#include "node/tsctl/tsctl_range.h"

#include <algorithm>

#include "node/tsctl/tsctl_format.h"
#include "node/tsctl/tsctl_txn.h"  // FailAnswer, FailCallStatus

namespace ts::tsctl {

using rpc::ClientCode;
using rpc::ClientOp;

void AddRangeOptions(CLI::App& get, RangeArgs* a) {
  get.add_option("--prefix", a->prefix,
                 "Instead of KEY: every key that starts with PREFIX (\"\" every key), in key order, a page at a "
                 "time; each page is a linearizable read of its own (the pages together are not one snapshot)");
  get.add_option("--limit", a->limit,
                 "With --prefix: print at most N keys, then, if more follow, how to continue (--after TOKEN; "
                 "with --json: \"more\" and \"after\")")
      ->check(CLI::Range(uint64_t{1}, UINT64_MAX));
  get.add_option("--after", a->after, "With --prefix: continue after the page that printed this token");
  get.add_flag("--keys-only", a->keys_only, "With --prefix: print the keys without their values");
  get.add_flag("--count", a->count, "With --prefix: print how many keys there are (no keys or values travel)");
  get.add_flag("--serializable", a->serializable,
               "With --prefix: read the answering node's applied state, without the leader's lease (any node; it "
               "may trail the leader: --json gives the applied slot)");
}

std::string RangeArgsRefusal(const RangeArgs& a, bool key_given) {
  const bool range_flags = a.limit != 0 || !a.after.empty() || a.keys_only || a.count || a.serializable;
  if (a.given && key_given) return "bad arguments: get takes KEY or --prefix PREFIX, not both";
  if (!a.given && !key_given) return "bad arguments: get takes KEY, or --prefix PREFIX; see tsctl get --help";
  if (!a.given && range_flags) {
    return "bad arguments: --limit, --after, --keys-only, --count and --serializable go with --prefix";
  }
  if (a.count && (a.limit != 0 || a.keys_only)) return "bad arguments: --count takes no --limit or --keys-only";
  return "";
}

nlohmann::json RangeEntryJson(const rpc::RangeEntry& e, bool keys_only) {
  nlohmann::json j;
  SetBytes(j, "key", e.key);
  if (!keys_only) SetBytes(j, "value", e.value);
  j["mod_slot"] = e.mod_slot;
  j["lease"] = e.lease;
  return j;
}

nlohmann::json RangeAnswerJson(const rpc::ClientResponse& r) {
  nlohmann::json j;
  if (r.range_flags & rpc::kRangeCountOnly) {
    j["count"] = r.total;
  } else {
    nlohmann::json entries = nlohmann::json::array();
    for (const rpc::RangeEntry& e : r.range) entries.push_back(RangeEntryJson(e, r.range_flags & rpc::kRangeKeysOnly));
    j["entries"] = std::move(entries);
  }
  j["more"] = (r.range_flags & rpc::kRangeMore) != 0;
  if (r.range_flags & rpc::kRangeMore) j["after"] = r.range_after;
  j["serializable"] = (r.range_flags & rpc::kRangeSerializable) != 0;
  return j;
}

int RunRange(client::Client& client, const RangeArgs& a, Output& out) {
  rpc::ClientRequest req;
  req.op = ClientOp::kRange;
  req.key = a.prefix;
  req.after = a.after;
  req.range_flags = static_cast<uint8_t>((a.keys_only ? rpc::kRangeKeysOnly : 0) |
                                         (a.count ? rpc::kRangeCountOnly : 0) |
                                         (a.serializable ? rpc::kRangeSerializable : 0));
  nlohmann::json all = nlohmann::json::array();
  uint64_t printed = 0, pages = 0, counted = 0;
  for (;;) {
    req.limit = static_cast<uint32_t>(a.limit == 0 ? kRangePageEntries
                                                   : std::min<uint64_t>(kRangePageEntries, a.limit - printed));
    auto r = client.Call(req);
    if (!r.ok()) return FailCallStatus(out, r.status());
    if (r->code != ClientCode::kOk) return FailAnswer(out, *r, "prefix " + Printable(a.prefix));
    ++pages;
    const bool more = (r->range_flags & rpc::kRangeMore) != 0;
    if (a.count) {  // a page counts a bounded number of keys; the sum is the count
      counted += r->total;
      if (more) {
        req.after = r->range_after;
        continue;
      }
      nlohmann::json j = {{"ok", true},         {"op", "range"},         {"prefix", a.prefix}, {"count", counted},
                          {"pages", pages},     {"applied_slot", r->slot},
                          {"serializable", (r->range_flags & rpc::kRangeSerializable) != 0}};
      out.Print(j, std::to_string(counted));
      return kExitOk;
    }
    for (const rpc::RangeEntry& e : r->range) {
      if (out.json()) {
        all.push_back(RangeEntryJson(e, a.keys_only));
      } else {
        out.out() << Printable(e.key, SIZE_MAX) << '\n';
        if (!a.keys_only) out.out() << Printable(e.value, SIZE_MAX) << '\n';
      }
    }
    printed += r->range.size();
    if (!more || (a.limit != 0 && printed >= a.limit)) {
      if (out.json()) {
        nlohmann::json j = {{"ok", true},           {"op", "range"}, {"prefix", a.prefix}, {"entries", std::move(all)},
                            {"count", printed},     {"pages", pages}, {"more", more},
                            {"applied_slot", r->slot},
                            {"serializable", (r->range_flags & rpc::kRangeSerializable) != 0}};
        if (more) j["after"] = r->range_after;
        out.out() << DumpJson(j) << '\n';
      } else if (more) {
        out.Note("more keys follow: tsctl get --prefix \"" + Printable(a.prefix) + "\" --after " + r->range_after);
      }
      return kExitOk;
    }
    req.after = r->range_after;
  }
}

}  // namespace ts::tsctl

// tsctl output formatting; see tsctl_format.h.
#include "node/tsctl/tsctl_format.h"

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <map>
#include <utility>

namespace ts::tsctl {

namespace {

// Column-aligned text table; the last column is not padded.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : width_(header.size(), 0) { Add(std::move(header)); }

  void Add(std::vector<std::string> row) {
    assert(row.size() <= width_.size());
    for (size_t i = 0; i < row.size(); ++i) width_[i] = std::max(width_[i], row[i].size());
    rows_.push_back(std::move(row));
  }
  // A row that is one free-text cell after the first column (does not widen).
  void AddNote(std::string first, std::string note) {
    width_[0] = std::max(width_[0], first.size());
    notes_.emplace(rows_.size(), std::make_pair(std::move(first), std::move(note)));
    rows_.emplace_back();
  }
  void AddIndented(std::string line) {
    notes_.emplace(rows_.size(), std::make_pair(std::string(), std::move(line)));
    rows_.emplace_back();
  }

  std::string Render() const {
    std::string out;
    for (size_t r = 0; r < rows_.size(); ++r) {
      auto note = notes_.find(r);
      if (note != notes_.end()) {
        if (note->second.first.empty()) {
          out += "  " + note->second.second;
        } else {
          out += Pad(note->second.first, width_[0]) + "  " + note->second.second;
        }
        out += '\n';
        continue;
      }
      const auto& row = rows_[r];
      std::string line;
      for (size_t i = 0; i < row.size(); ++i) {
        line += i + 1 == row.size() ? row[i] : Pad(row[i], width_[i]) + "  ";
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line + '\n';
    }
    return out;
  }

 private:
  static std::string Pad(const std::string& s, size_t width) {
    return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
  }
  std::vector<size_t> width_;
  std::vector<std::vector<std::string>> rows_;
  std::map<size_t, std::pair<std::string, std::string>> notes_;
};

std::string Dash(uint64_t v) { return v == 0 ? "-" : std::to_string(v); }

}  // namespace

bool ValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    if (c >= 0x80) {
      if ((c >> 5) == 0x6) n = 1;
      else if ((c >> 4) == 0xE) n = 2;
      else if ((c >> 3) == 0x1E) n = 3;
      else return false;
    }
    if (i + n >= s.size() && n > 0) return false;
    for (size_t k = 1; k <= n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return false;
    }
    i += n + 1;
  }
  return true;
}

std::string Printable(std::string_view bytes, size_t bytes_max) {
  std::string out;
  size_t n = std::min(bytes.size(), bytes_max);
  out.reserve(n + 16);
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(bytes[i]);
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      default:
        if (c < 0x20 || c >= 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  if (bytes.size() > n) out += "...(" + std::to_string(bytes.size()) + " bytes)";
  return out;
}

std::string OneLine(std::string_view message) {
  std::string out(message);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string Hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string MemberRole(const rpc::NodeStatus& s) {
  if (s.voter) return "voter";
  if (!s.members.empty() &&
      std::none_of(s.members.begin(), s.members.end(), [&](const rpc::MemberStatus& m) { return m.id == s.id; })) {
    return "removed";
  }
  return "learner";
}

namespace {

// Which cluster each answering node belongs to: one line if they agree,
// else one line per UUID (a data dir of another cluster shows up here).
std::string ClusterUuidLines(const std::vector<StatusOr<rpc::NodeStatus>>& statuses) {
  std::map<std::string, std::vector<consensus::NodeId>> by_uuid;
  for (const auto& s : statuses) {
    if (s.ok()) by_uuid[s->cluster_uuid].push_back(s->id);
  }
  if (by_uuid.empty()) return "";
  auto name = [](const std::string& uuid) {
    return uuid.empty() ? std::string("cluster uuid not known yet (no genesis applied or learned)")
                        : "cluster uuid " + uuid;
  };
  if (by_uuid.size() == 1) return name(by_uuid.begin()->first) + "\n";
  std::string out;
  for (const auto& [uuid, ids] : by_uuid) {
    std::string list;
    for (consensus::NodeId id : ids) list += (list.empty() ? "" : ", ") + std::to_string(id);
    out += name(uuid) + ": node" + (ids.size() > 1 ? "s " : " ") + list + "\n";
  }
  return out;
}

// Once for the cluster, when every node answered, writes the same
// key-value model past the first and holds no older-model data: what
// `tsctl migrate` waits for (a pending node says so on its own line).
std::string KvModelLine(const std::vector<StatusOr<rpc::NodeStatus>>& statuses) {
  if (statuses.empty()) return "";
  uint32_t model = 0;
  for (const auto& s : statuses) {
    if (!s.ok() || !s->older_model_data.empty() || s->kv_write_model <= 1) return "";
    if (model != 0 && s->kv_write_model != model) return "";
    model = s->kv_write_model;
  }
  return "key-value model " + std::to_string(model) + " on every node, no older-model data left: versions that " +
         "read only model " + std::to_string(model) + " may join\n";
}

// A wire version range as "1-2"; a node of 1.1.0 sends none (0): "1".
std::string WireRange(uint32_t lo, uint32_t hi) {
  if (hi == 0) return "1";
  return lo == hi ? std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(hi);
}

}  // namespace

std::string FormatStatusTable(const std::vector<rpc::HostPort>& endpoints,
                              const std::vector<StatusOr<rpc::NodeStatus>>& statuses, bool show_peers) {
  assert(endpoints.size() == statuses.size());
  Table t({"ENDPOINT", "ID", "ROLE", "MEMBER", "BALLOT", "CHOSEN", "APPLIED", "LEADER", "LEASE_MS", "VERSION",
           "WIRE", "MARKER", "KV_FMT", "RC", "INCARNATION", "LOG_DIGEST", "STATE_DIGEST"});
  for (size_t i = 0; i < endpoints.size(); ++i) {
    if (!statuses[i].ok()) {
      t.AddNote(endpoints[i].ToString(), "unreachable: " + OneLine(statuses[i].status().message()));
      continue;
    }
    const rpc::NodeStatus& s = *statuses[i];
    // A digest prefix is enough to compare nodes by eye; JSON has it whole.
    std::string digest = s.log_digest.substr(0, 16);
    t.Add({endpoints[i].ToString(), std::to_string(s.id), s.role, MemberRole(s), consensus::ToString(s.ballot),
           std::to_string(s.chosen_slot), std::to_string(s.applied_slot), Dash(s.leader),
           std::to_string(s.lease_left_ms), s.software_version.empty() ? "-" : s.software_version,
           WireRange(s.wire_version_min, s.wire_version_max), s.latest_marker.empty() ? "-" : s.latest_marker, std::to_string(s.kv_write_model),
           s.coordinator ? "yes" : "-", Hex64(s.incarnation), digest.empty() ? "-" : digest,
           s.state_digest.empty() ? "-" : s.state_digest});
    // What the version rules say, when it matters (docs/design/versions.md).
    if (!s.downgrade_to.empty()) t.AddIndented("node " + std::to_string(s.id) + ": downgrade to " + s.downgrade_to + " in force");
    if (s.stuck_at_slot != 0) {
      t.AddIndented("node " + std::to_string(s.id) + ": cannot read the decree in slot " + std::to_string(s.stuck_at_slot) +
                    "; recording, not applying");
    }
    if (!s.eligible && !s.ineligible_reason.empty()) {
      t.AddIndented("node " + std::to_string(s.id) + ": may not lead: " + OneLine(s.ineligible_reason));
    }
    if (s.snapshot_slot != 0 || s.compacted_slot != 0) {
      t.AddIndented("node " + std::to_string(s.id) + ": snapshot at slot " + std::to_string(s.snapshot_slot) + " (" +
                    std::to_string(s.snapshot_bytes) + " bytes), log compacted up to slot " +
                    std::to_string(s.compacted_slot));
    }
    if (s.client_connections_refused + s.client_connections_idle_closed + s.accept_errors > 0) {
      t.AddIndented("node " + std::to_string(s.id) + ": client connections refused over the cap " +
                    std::to_string(s.client_connections_refused) + ", closed idle " +
                    std::to_string(s.client_connections_idle_closed) + "; failed accepts (out of descriptors...) " +
                    std::to_string(s.accept_errors));
    }
    if (s.tls_handshakes_failed + s.certificates_refused + s.requests_denied > 0) {
      t.AddIndented("node " + std::to_string(s.id) + ": TLS handshakes failed " +
                    std::to_string(s.tls_handshakes_failed) + ", certificates refused " +
                    std::to_string(s.certificates_refused) + ", requests denied to the client's role " +
                    std::to_string(s.requests_denied));
    }
    if (s.counters.digest_mismatches > 0) {
      t.AddIndented("node " + std::to_string(s.id) + ": STATE DIGEST DIFFERS from a peer's at " +
                    std::to_string(s.counters.digest_mismatches) + " checkpoint(s); see its log");
    }
    if (!s.older_model_data.empty()) {
      t.AddIndented("node " + std::to_string(s.id) + ": migration pending: holds " + OneLine(s.older_model_data) +
                    " (versions that read only newer models may not join until `tsctl migrate`)");
    }
    if (!show_peers) continue;
    for (const rpc::PeerStatus& p : s.peers) {
      std::string heard =
          p.last_heard_ms_ago < 0 ? "never heard" : "heard " + std::to_string(p.last_heard_ms_ago) + " ms ago";
      std::string refused;
      if (p.refusals > 0) {
        refused = ", " + std::to_string(p.refusals) + " handshake" + (p.refusals == 1 ? "" : "s") + " refused" +
                  (p.last_refusal.empty() ? "" : " (last: " + OneLine(p.last_refusal) + ")");
      }
      t.AddIndented("node " + std::to_string(s.id) + " sees node " + std::to_string(p.id) + " (" + p.peer_addr +
                    "): " + (p.connected ? "connected" : "not connected") + ", version " +
                    (p.software_version.empty() ? "unknown" : p.software_version) + ", wire " +
                    (p.wire_version_max == 0 ? "unknown" : WireRange(p.wire_version_min, p.wire_version_max)) + ", " +
                    heard + refused);
    }
  }
  return t.Render() + KvModelLine(statuses) + ClusterUuidLines(statuses);
}

nlohmann::json StatusJson(const std::vector<rpc::HostPort>& endpoints,
                          const std::vector<StatusOr<rpc::NodeStatus>>& statuses) {
  assert(endpoints.size() == statuses.size());
  nlohmann::json nodes = nlohmann::json::array();
  size_t answered = 0;
  for (size_t i = 0; i < endpoints.size(); ++i) {
    nlohmann::json n;
    n["endpoint"] = endpoints[i].ToString();
    if (!statuses[i].ok()) {
      n["reachable"] = false;
      n["error"] = OneLine(statuses[i].status().message());
      nodes.push_back(std::move(n));
      continue;
    }
    ++answered;
    const rpc::NodeStatus& s = *statuses[i];
    n["reachable"] = true;
    n["id"] = s.id;
    n["role"] = s.role;
    n["ballot"] = consensus::ToString(s.ballot);
    n["leader"] = s.leader;
    n["leader_client_addr"] = s.leader_client_addr;
    n["chosen_slot"] = s.chosen_slot;
    n["applied_slot"] = s.applied_slot;
    n["last_slot"] = s.last_slot;
    n["lease_left_ms"] = s.lease_left_ms;
    n["version"] = s.software_version;
    // A node of 1.1.0 does not say: it speaks wire version 1 only.
    n["wire_version_min"] = s.wire_version_min == 0 ? 1 : s.wire_version_min;
    n["wire_version_max"] = s.wire_version_max == 0 ? 1 : s.wire_version_max;
    n["cluster_id"] = s.cluster_id;
    n["cluster_uuid"] = s.cluster_uuid;
    n["incarnation"] = Hex64(s.incarnation);
    n["voter"] = s.voter;
    n["member"] = MemberRole(s);
    n["log_digest"] = s.log_digest;
    n["state_digest"] = s.state_digest;
    n["coordinator"] = s.coordinator;
    n["keys"] = s.keys;
    n["latest_marker"] = s.latest_marker;
    n["downgrade_to"] = s.downgrade_to;
    n["kv_write_model"] = s.kv_write_model;
    n["eligible"] = s.eligible;
    n["ineligible_reason"] = s.ineligible_reason;
    n["stuck_at_slot"] = s.stuck_at_slot;
    n["snapshot_slot"] = s.snapshot_slot;
    n["snapshot_bytes"] = s.snapshot_bytes;
    n["compacted_slot"] = s.compacted_slot;
    n["snapshots_taken"] = s.snapshots_taken;
    n["snapshots_installed"] = s.snapshots_installed;
    n["older_model_data"] = s.older_model_data;
    n["client_connections_refused"] = s.client_connections_refused;
    n["client_connections_idle_closed"] = s.client_connections_idle_closed;
    n["accept_errors"] = s.accept_errors;
    n["tls_handshakes_failed"] = s.tls_handshakes_failed;
    n["certificates_refused"] = s.certificates_refused;
    n["requests_denied"] = s.requests_denied;
    n["digest_mismatches"] = s.counters.digest_mismatches;
    n["migration_complete"] = s.older_model_data.empty();
    nlohmann::json peers = nlohmann::json::array();
    for (const rpc::PeerStatus& p : s.peers) {
      peers.push_back({{"id", p.id},
                       {"peer_addr", p.peer_addr},
                       {"connected", p.connected},
                       {"version", p.software_version},
                       {"wire_version_min", p.wire_version_min},
                       {"wire_version_max", p.wire_version_max},
                       {"last_heard_ms_ago", p.last_heard_ms_ago},
                       {"refusals", p.refusals},
                       {"last_refusal", p.last_refusal}});
    }
    n["peers"] = std::move(peers);
    nodes.push_back(std::move(n));
  }
  return {{"ok", answered > 0}, {"answered", answered}, {"endpoints", endpoints.size()}, {"nodes", std::move(nodes)}};
}

bool MemberCaughtUp(const rpc::MemberStatus& m) { return m.heard && m.note == "caught up"; }

namespace {

constexpr int64_t kHeardRecentlyMs = 2000;

const rpc::PeerStatus* PeerOf(const rpc::NodeStatus& s, consensus::NodeId id) {
  for (const rpc::PeerStatus& p : s.peers) {
    if (p.id == id) return &p;
  }
  return nullptr;
}

// The incarnation a member is known by: the bound one for a voter, the one
// it announces for a learner ("-" if not heard).
std::string MemberIncarnation(const rpc::MemberStatus& m) {
  if (m.voter) return Hex64(m.incarnation);
  return m.heard ? Hex64(m.heard_incarnation) : "-";
}

}  // namespace

bool MemberConnected(const rpc::NodeStatus& leader, consensus::NodeId id) {
  if (id == leader.id) return true;
  const rpc::PeerStatus* p = PeerOf(leader, id);
  return p != nullptr && p->connected && p->last_heard_ms_ago >= 0 && p->last_heard_ms_ago <= kHeardRecentlyMs;
}

bool MemberReady(const rpc::NodeStatus& leader, const rpc::MemberStatus& m) {
  return MemberCaughtUp(m) && MemberConnected(leader, m.id);
}

std::string MemberProgress(const rpc::NodeStatus& leader, const rpc::MemberStatus& m) {
  std::string p = m.note.empty() ? "not heard" : m.note;
  if (m.voter && m.heard && m.heard_incarnation != m.incarnation) {
    p += " (announces " + Hex64(m.heard_incarnation) + ")";
  }
  if (m.id == leader.id) {
    p += " (leader)";
  } else if (m.heard && !MemberConnected(leader, m.id)) {
    p += "; no link to the leader now";
  }
  return p;
}

std::string FormatMemberTable(const rpc::NodeStatus& leader) {
  size_t voters = 0;
  for (const rpc::MemberStatus& m : leader.members) voters += m.voter ? 1 : 0;
  size_t learners = leader.members.size() - voters;
  std::string out = "leader node " + std::to_string(leader.id) + ", " +
                    (leader.cluster_uuid.empty() ? std::string("no cluster uuid yet")
                                                 : "cluster uuid " + leader.cluster_uuid) +
                    ", chosen slot " + std::to_string(leader.chosen_slot) + ": " + std::to_string(voters) + " voter" +
                    (voters == 1 ? "" : "s") + " (quorum " + std::to_string(voters / 2 + 1) + "), " +
                    std::to_string(learners) + " learner" + (learners == 1 ? "" : "s") + "\n";
  Table t({"ID", "ROLE", "INCARNATION", "PEER_ADDR", "MATCH", "PROGRESS"});
  for (const rpc::MemberStatus& m : leader.members) {
    t.Add({std::to_string(m.id), m.voter ? "voter" : "learner", MemberIncarnation(m),
           m.peer_addr.empty() ? "-" : m.peer_addr, m.heard ? std::to_string(m.match) : "-",
           MemberProgress(leader, m)});
  }
  return out + t.Render();
}

nlohmann::json MembersJson(const rpc::NodeStatus& leader) {
  nlohmann::json members = nlohmann::json::array();
  for (const rpc::MemberStatus& m : leader.members) {
    members.push_back({{"id", m.id},
                       {"role", m.voter ? "voter" : "learner"},
                       {"voter", m.voter},
                       {"incarnation", Hex64(m.incarnation)},
                       {"peer_addr", m.peer_addr},
                       {"heard", m.heard},
                       {"heard_incarnation", m.heard ? Hex64(m.heard_incarnation) : ""},
                       {"match", m.match},
                       {"note", m.note},
                       {"caught_up", MemberCaughtUp(m)},
                       {"connected", MemberConnected(leader, m.id)},
                       {"ready", MemberReady(leader, m)},
                       {"progress", MemberProgress(leader, m)}});
  }
  return {{"ok", true},
          {"leader", leader.id},
          {"cluster_uuid", leader.cluster_uuid},
          {"chosen_slot", leader.chosen_slot},
          {"members", std::move(members)}};
}

std::string FormatLogTable(const std::vector<rpc::LogRow>& rows) {
  Table t({"SLOT", "TYPE", "SIZE", "SUMMARY"});
  for (const rpc::LogRow& r : rows) {
    t.Add({std::to_string(r.slot), Printable(r.type, 40), std::to_string(r.size_bytes), Printable(r.summary, 120)});
  }
  return t.Render();
}

nlohmann::json LogJson(uint64_t from_slot, const std::vector<rpc::LogRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const rpc::LogRow& r : rows) {
    out.push_back({{"slot", r.slot}, {"type", r.type}, {"size_bytes", r.size_bytes}, {"summary", r.summary}});
  }
  uint64_t next = rows.empty() ? from_slot : rows.back().slot + 1;
  return {{"ok", true}, {"from", from_slot}, {"next_from", next}, {"rows", std::move(out)}};
}

std::string DumpJson(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {
constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}  // namespace

std::string Base64Encode(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = uint32_t(uint8_t(in[i])) << 16 | uint32_t(uint8_t(in[i + 1])) << 8 | uint8_t(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += kBase64[(v >> s) & 63];
  }
  if (i < in.size()) {
    uint32_t v = uint32_t(uint8_t(in[i])) << 16 | (i + 1 < in.size() ? uint32_t(uint8_t(in[i + 1])) << 8 : 0);
    out += kBase64[(v >> 18) & 63];
    out += kBase64[(v >> 12) & 63];
    out += i + 1 < in.size() ? kBase64[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

StatusOr<std::string> Base64Decode(std::string_view in) {
  if (in.size() % 4 != 0) return Status::InvalidArgument("base64 text must come in groups of 4 characters");
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (size_t i = 0; i < in.size(); i += 4) {
    uint32_t v = 0;
    int pad = 0;
    for (size_t k = 0; k < 4; ++k) {
      char c = in[i + k];
      int d = -1;
      if (c >= 'A' && c <= 'Z') d = c - 'A';
      else if (c >= 'a' && c <= 'z') d = c - 'a' + 26;
      else if (c >= '0' && c <= '9') d = c - '0' + 52;
      else if (c == '+') d = 62;
      else if (c == '/') d = 63;
      else if (c == '=' && i + 4 == in.size() && k >= 2) d = 0, ++pad;
      if (d < 0 || (pad > 0 && c != '=')) return Status::InvalidArgument("not base64");
      v = v << 6 | static_cast<uint32_t>(d);
    }
    out += static_cast<char>(v >> 16);
    if (pad < 2) out += static_cast<char>((v >> 8) & 0xFF);
    if (pad < 1) out += static_cast<char>(v & 0xFF);
  }
  return out;
}

void SetBytes(nlohmann::json& j, const std::string& name, std::string_view bytes) {
  if (ValidUtf8(bytes)) j[name] = bytes;
  j[name + "_base64"] = Base64Encode(bytes);
}

// A bytes field of a JSON body: "NAME" (text) or "NAME_base64".
StatusOr<std::string> BytesField(const nlohmann::json& j, const std::string& name, bool required) {
  if (j.contains(name)) {
    if (!j[name].is_string()) return Status::InvalidArgument("\"" + name + "\" must be a string");
    return j[name].get<std::string>();
  }
  if (j.contains(name + "_base64")) {
    if (!j[name + "_base64"].is_string()) return Status::InvalidArgument("\"" + name + "_base64\" must be a string");
    auto b = Base64Decode(j[name + "_base64"].get<std::string>());
    if (!b.ok()) return Status::InvalidArgument("\"" + name + "_base64\": " + b.status().message());
    return b;
  }
  if (required) return Status::InvalidArgument("the body needs \"" + name + "\" or \"" + name + "_base64\"");
  return std::string();
}

nlohmann::json WatchEventJson(const rpc::WatchEvent& e) {
  const bool put = e.kind == rpc::WatchEvent::Kind::kPut;
  const char* type = put ? "put" : e.kind == rpc::WatchEvent::Kind::kDeploy ? "deploy" : "delete";
  nlohmann::json j = {{"slot", e.slot}, {"type", type}};
  SetBytes(j, "key", e.key);
  if (!put) return j;
  SetBytes(j, "value", e.value);
  j["mod_slot"] = e.mod_slot;
  j["lease"] = e.lease;
  return j;
}

}  // namespace ts::tsctl

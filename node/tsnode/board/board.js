// The station's board: a read-only view of the cluster, its versions and
// its deployments, from this node's HTTP port. It only reads: GET
// /v1/cluster (every member's status) every STATUS_MS, GET /v1/versions
// when the marker or a downgrade changes, the executors with each status,
// GET /v1/deploy/... (schedulers, blue-green deployments, LRPs) at start and
// whenever the watch stream (GET /v1/watch?prefix=&deploy=true, server-sent
// events) says a deployment changed, or every POLL_MS while that stream is
// down. Every text from the cluster goes into the page with textContent,
// never as markup.
"use strict";

const STATUS_MS = 2000;
const POLL_MS = 5000;
const SCHEDULER_ROOMS_MAX = 40;  // schedulers whose rooms are fetched one by one

const state = { cluster: null, lostSince: null, failures: 0, marker: null, watchLive: false, deployTimer: null };

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k === "id") e.id = v;
    else if (k === "title") e.title = v;
    else if (k.startsWith("data-")) e.setAttribute(k, String(v));
    else if (k === "style") e.style.cssText = v;
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(c == null ? "" : String(c)));
  return e;
}

function replace(id, ...children) {
  const target = document.getElementById(id);
  target.replaceChildren(...children);
  return target;
}

async function getJson(path) {
  const r = await fetch(path, { headers: { Accept: "application/json" }, cache: "no-store" });
  const body = await r.json().catch(() => null);
  if (!r.ok) throw new Error((body && body.message) || (r.status + " " + r.statusText));
  return body;
}

// ---- connection state ----

function setConnection(ok, why) {
  const badge = document.getElementById("connection");
  if (ok) {
    state.failures = 0;
    state.lostSince = null;
    badge.dataset.state = "live";
    badge.textContent = "connected";
  } else {
    state.failures += 1;
    if (!state.lostSince) state.lostSince = new Date();
    badge.dataset.state = "lost";
    badge.textContent = "lost the node, retrying (attempt " + state.failures + ")";
    badge.title = why || "";
  }
  renderAlerts();
}

// ---- cluster ----

function majority(n) { return Math.floor(n / 2) + 1; }

function clusterProblems(c) {
  const problems = [];
  if (state.lostSince) {
    problems.push({ level: "bad", text: "Lost this node since " + state.lostSince.toLocaleTimeString() +
                    "; retrying every " + STATUS_MS / 1000 + " s. What is shown is from before." });
  }
  if (!c) return problems;
  const nodes = c.nodes || [];
  const up = nodes.filter((n) => n.reachable);
  const voters = (c.members && c.members.members || []).filter((m) => m.voter);
  const upVoters = up.filter((n) => n.voter).length;
  const leader = up.find((n) => n.role === "leader" && n.lease_left_ms > 0);
  if (voters.length > 0 && upVoters < majority(voters.length)) {
    problems.push({ level: "bad", text: "No quorum: " + upVoters + " of " + voters.length +
                    " voters answer, " + majority(voters.length) + " are needed." });
  } else if (!leader) {
    problems.push({ level: "bad", text: "No leader holds its lease: writes wait until one is elected." });
  }
  const down = nodes.filter((n) => !n.reachable);
  for (const n of down) problems.push({ level: "warn", text: "Node at " + n.endpoint + " does not answer: " + n.error });
  const byApplied = new Map();
  let mismatches = 0;
  for (const n of up) {
    mismatches += n.digest_mismatches || 0;
    const seen = byApplied.get(n.applied_slot);
    if (seen && seen.state_digest !== n.state_digest) {
      problems.push({ level: "bad", text: "State digests differ at slot " + n.applied_slot + ": node " + seen.id +
                      " and node " + n.id + "." });
    }
    byApplied.set(n.applied_slot, n);
  }
  if (mismatches > 0) {
    problems.push({ level: "bad", text: mismatches + " digest checkpoint mismatches reported (tsctl status shows which)." });
  }
  for (const n of up) if (n.health !== "ok") problems.push({ level: "warn", text: "Node " + n.id + ": " + n.health });
  return problems;
}

function renderAlerts() {
  replace("alerts", ...clusterProblems(state.cluster).map((p) => el("div", { class: p.level }, p.text)));
}

function linkCell(n) {
  const peers = n.peers || [];
  const connected = peers.filter((p) => p.connected).length;
  return el("td", { class: "links", title: peers.map((p) => "node " + p.id + (p.connected ? " up" : " down")).join(", ") },
            connected + "/" + peers.length);
}

function memberRow(n) {
  if (!n.reachable) {
    return el("tr", { class: "unreachable", "data-endpoint": n.endpoint },
              el("td", {}, n.endpoint), el("td", { "style": "white-space: normal", class: "role" }, "unreachable"),
              el("td", { class: "error" }, n.error));
  }
  const refusals = (n.peers || []).reduce((a, p) => a + (p.refusals || 0), 0);
  return el("tr", { "data-node-id": n.id, class: n.id === state.cluster.self ? "self" : "" },
            el("td", { class: "id" }, String(n.id) + (n.id === state.cluster.self ? " (this)" : "")),
            el("td", { class: "role role-" + n.role }, n.role),
            el("td", { class: "member" }, n.member),
            el("td", { class: "version" }, n.version),
            el("td", { class: "wire" }, n.wire_version_min + "–" + n.wire_version_max),
            el("td", { class: "ballot" }, n.ballot),
            el("td", { class: "chosen" }, n.chosen_slot),
            el("td", { class: "applied" }, n.applied_slot),
            el("td", { class: "lease" }, n.lease_left_ms > 0 ? n.lease_left_ms + " ms" : "–"),
            el("td", { class: "health" + (n.health === "ok" ? "" : " health-bad") }, n.health),
            linkCell(n),
            el("td", { class: "refusals", title: (n.peers || []).map((p) => p.last_refusal).filter(Boolean).join("; ") },
               refusals));
}

function renderCluster(c) {
  const up = c.nodes.find((n) => n.reachable && n.id === c.self) || c.nodes.find((n) => n.reachable) || {};
  replace("cluster-name", (up.cluster_id || "") + (up.cluster_uuid ? " · " + up.cluster_uuid : ""));
  document.getElementById("cluster-name").dataset.uuid = up.cluster_uuid || "";
  const leader = c.nodes.find((n) => n.reachable && n.role === "leader");
  replace("cluster-summary", c.answered + " of " + c.endpoints + " members answer · leader: " +
          (leader ? "node " + leader.id : "none known"));
  document.querySelector("#members tbody").replaceChildren(...c.nodes.map(memberRow));
  renderVersionState(c, up);
}

// ---- versions ----

function renderVersionState(c, self) {
  const marker = self.latest_marker || "none";
  const down = self.downgrade_to ? " · downgrade to " + self.downgrade_to + " in force" : "";
  const p = replace("version-state", "Marker: ", el("b", { id: "marker" }, marker), down);
  p.dataset.downgrade = self.downgrade_to || "";
  const mix = new Map();
  for (const n of c.nodes.filter((x) => x.reachable)) {
    const m = mix.get(n.version) || { nodes: [], eligible: [] };
    m.nodes.push(n.id);
    if (n.eligible) m.eligible.push(n.id);
    mix.set(n.version, m);
  }
  const chips = [...mix.entries()].sort().map(([v, m]) =>
    el("span", { "data-version": v, "data-count": m.nodes.length },
       v + ": " + m.nodes.length + " node" + (m.nodes.length === 1 ? "" : "s") + " (" + m.nodes.join(", ") + ")" +
       (m.eligible.length ? " · may lead: " + m.eligible.join(", ") : " · may not lead")));
  replace("version-mix", el("div", { class: "mix" }, ...chips));
  const key = marker + "|" + (self.downgrade_to || "");
  if (key !== state.marker) {
    state.marker = key;
    loadVersions();
  }
}

async function loadVersions() {
  try {
    const v = await getJson("/v1/versions");
    replace("version-range", "Slots " + v.first_slot + " to " + v.scanned_upto +
            (v.first_slot > 1 ? " (the decrees before are compacted into a snapshot)" : "") +
            (v.complete ? "" : " (still reading the log)"));
    replace("version-timeline", ...v.rows.map((r) =>
      el("li", { "data-slot": r.slot, "data-type": r.type }, "slot " + r.slot + ": " + r.summary)));
    if (!v.complete) setTimeout(loadVersions, 500);
  } catch (e) {
    replace("version-range", "The timeline could not be read: " + e.message);
    state.marker = null;  // read again on the next status
  }
}

// ---- deployments ----

const SEGMENTS = [
  ["ready-new", "ready, active version"], ["occupied", "occupied"], ["ready-old", "ready, other version"],
  ["pending", "pending"], ["error", "error"], ["terminating", "terminating"],
];

function segmentOf(room, active) {
  if (room.status === "terminating") return "terminating";
  if (room.status === "error") return "error";
  if (room.status === "pending") return "pending";
  if (room.status === "occupied") return "occupied";
  return room.version === active ? "ready-new" : "ready-old";
}

function roomBar(s) {
  const counts = new Map();
  for (const r of s.rooms || []) {
    if (r.validation) continue;
    const seg = segmentOf(r, s.active_version);
    counts.set(seg, (counts.get(seg) || 0) + 1);
  }
  const total = [...counts.values()].reduce((a, b) => a + b, 0) || 1;
  const bar = el("div", { class: "bar", title: "rooms by state" });
  for (const [seg, label] of SEGMENTS) {
    const n = counts.get(seg) || 0;
    if (n > 0) bar.append(el("span", { class: "seg-" + seg, "data-segment": seg, "data-count": n,
                                       title: label + ": " + n, style: "width:" + (100 * n / total) + "%" }));
  }
  return bar;
}

function legend() {
  return el("div", { class: "legend" }, ...SEGMENTS.map(([seg, label]) => el("span", {}, el("i", { class: "seg-" + seg }), label)));
}

// A query's answer is {"result": the view}: an array, or an object keyed by name.
function list(x) { return Array.isArray(x.result) ? x.result : Object.values(x.result || {}); }

function schedulerCard(s) {
  const c = s.counts || {};
  const byVersion = new Map();
  for (const r of s.rooms || []) if (!r.validation) byVersion.set(r.version, (byVersion.get(r.version) || 0) + 1);
  const facts = el("div", { class: "kv counts", "data-total": c.total, "data-ready": c.ready,
                            "data-occupied": c.occupied, "data-pending": c.pending, "data-new": c.new,
                            "data-old": c.old },
                   el("span", {}, "active ", el("b", { class: "active-version" }, s.active_version)),
                   el("span", {}, "rooms ", el("b", {}, c.total), " of ", s.desired),
                   el("span", {}, "ready ", el("b", {}, c.ready), " (floor ", s.desired_ready, ")"),
                   el("span", {}, "occupied ", el("b", {}, c.occupied)),
                   el("span", {}, "pending ", el("b", {}, c.pending)),
                   s.autoscale ? el("span", {}, "autoscale ", s.autoscale.min, "–", s.autoscale.max) : "",
                   s.validating ? el("span", { class: "validating" }, "validating ", s.validating) : "",
                   el("span", { class: "muted" }, [...byVersion.entries()].map(([v, n]) => v + ": " + n).join(" · ")));
  const card = el("div", { class: "card", "data-scheduler": s.scheduler },
                  el("div", { class: "title" }, s.scheduler), facts, roomBar(s));
  // Why the rollout moves or not, and since when (the coordinator's own words).
  if (s.reason && s.reason.reason) {
    card.append(el("div", { class: "reason state-" + s.reason.state, "data-state": s.reason.state },
                   s.reason.reason, s.reason.since_slot ? " (since slot " + s.reason.since_slot + ")" : ""));
  }
  for (const [v, f] of Object.entries(s.failed || {})) {
    card.append(el("div", { class: "failed", "data-failed": v }, v + " failed at slot " + f.slot + ": " + f.reason));
  }
  const r = s.rollout;
  if (r) {
    const floor = r.ready_floor;
    const moved = r.done ? "complete at slot " + r.finished_slot : c.new + " of " + c.total + " rooms on " + r.to;
    card.append(el("div", { class: "kv rollout", "data-done": r.done ? "yes" : "no", "data-to": r.to },
                   el("span", {}, "rollout ", el("b", {}, r.from, " → ", r.to), ": ", moved),
                   el("span", {}, "created ", r.created, " · deleted ", r.deleted),
                   floor === undefined ? "" :
                     el("span", { class: r.ready_min < floor ? "floor-broken" : "" },
                        "fewest ready ", r.ready_min, " (floor ", floor, r.ready_min < floor ? ": broken" : ": held", ")")));
  }
  return card;
}

function bgCard(d) {
  const versions = Object.entries(d.versions || {}).map(([v, stage]) => el("span", { "data-version": v, "data-stage": stage },
                                                                          "v" + v + " " + stage));
  return el("div", { class: "card", "data-bluegreen": d.deployment }, el("div", { class: "title" }, d.deployment),
            el("div", { class: "kv" }, ...versions),
            el("div", { class: "muted" }, Object.keys(d.clusters || {}).length + " clusters"));
}

function lrpCard(l) {
  const actual = l.actual_lrps || [];
  const onCurrent = actual.filter((a) => a.desired_lrp_definition_id === l.definition_id).length;
  const card = el("div", { class: "card", "data-lrp": l.process_guid }, el("div", { class: "title" }, l.process_guid),
                  el("div", { class: "kv" }, el("span", {}, "definition ", el("b", {}, l.definition_id)),
                     el("span", {}, onCurrent + " of " + l.instances + " instances on it")));
  const p = l.progress;
  if (p && p.status) {
    card.append(el("div", { class: "reason" + (p.paused ? " state-failed" : ""), "data-direction": p.direction,
                            "data-paused": p.paused ? "yes" : "no" }, p.status));
  }
  if (l.update_in_progress) {
    card.append(el("div", { class: "kv" }, (p && p.direction === "revert" ? "reverting from " : "update in progress from "),
                   el("b", {}, l.previous_definition_id)));
    const bar = el("div", { class: "bar" });
    const n = Math.max(1, l.instances);
    bar.append(el("span", { class: "seg-ready-new", style: "width:" + (100 * onCurrent / n) + "%" }),
               el("span", { class: "seg-ready-old", style: "width:" + (100 * (l.instances - onCurrent) / n) + "%" }));
    card.append(bar);
  }
  return card;
}

async function loadDeployments() {
  try {
    const [scheds, bgs, lrps] = await Promise.all(["sched", "bg", "lrp"].map((k) => getJson("/v1/deploy/" + k + "/")));
    const full = await Promise.all(list(scheds).slice(0, SCHEDULER_ROOMS_MAX).map((s) =>
      getJson("/v1/deploy/sched/" + encodeURIComponent(s.scheduler)).then((x) => x.result).catch(() => s)));
    const rest = list(scheds).slice(SCHEDULER_ROOMS_MAX);
    const schedCards = [...full, ...rest].map(schedulerCard);
    replace("schedulers", ...(schedCards.length ? [legend(), ...schedCards] : [el("p", { class: "muted" }, "none")]));
    const bgCards = list(bgs).map(bgCard);
    replace("bluegreen", ...(bgCards.length ? bgCards : [el("p", { class: "muted" }, "none")]));
    const lrpCards = list(lrps).map(lrpCard);
    replace("lrps", ...(lrpCards.length ? lrpCards : [el("p", { class: "muted" }, "none")]));
  } catch (e) {
    replace("live", "Deployments could not be read: " + e.message + "; retrying.");
  }
}

// The executors registered now (tsagent, under a lease: keys, not
// deployment decrees, so they are read with the status) and their rooms.
async function loadExecutors() {
  try {
    const executors = list(await getJson("/v1/deploy/executors/"));
    document.querySelector("#executors tbody").replaceChildren(...executors.map((x) =>
      el("tr", { "data-executor": x.name }, el("td", { class: "name" }, x.name), el("td", {}, x.version || ""),
         el("td", {}, x.started || ""), el("td", {}, x.rooms))));
  } catch (e) {
    // The status poll reports a lost node; the table keeps what it showed.
  }
}

function deploymentsChanged() {
  if (state.deployTimer) return;
  state.deployTimer = setTimeout(() => { state.deployTimer = null; loadDeployments(); }, 150);
}

function watchDeployments() {
  const source = new EventSource("/v1/watch?prefix=&deploy=true");
  source.addEventListener("open", () => {
    state.watchLive = true;
    replace("live", "Live: following deployment changes as they are applied.");
    loadDeployments();  // anything that changed while the stream was down
  });
  source.addEventListener("change", deploymentsChanged);
  source.addEventListener("end", (e) => {
    // The node ended the stream (compacted, busy...): start again from now.
    source.close();
    state.watchLive = false;
    replace("live", "The deployment stream ended (" + ((JSON.parse(e.data || "{}").message) || "") + "); polling.");
    setTimeout(watchDeployments, POLL_MS);
  });
  source.addEventListener("error", () => {
    state.watchLive = false;
    replace("live", "The deployment stream is down; polling every " + POLL_MS / 1000 + " s until it is back.");
  });
}

// ---- the loop ----

async function refreshCluster() {
  try {
    const c = await getJson("/v1/cluster");
    state.cluster = c;
    setConnection(true);
    renderCluster(c);
    loadExecutors();
    document.getElementById("updated").textContent = "Updated " + new Date().toLocaleTimeString() + ".";
  } catch (e) {
    setConnection(false, e.message);
  }
}

function start() {
  refreshCluster();
  setInterval(refreshCluster, STATUS_MS);
  loadDeployments();
  watchDeployments();
  setInterval(() => { if (!state.watchLive) loadDeployments(); }, POLL_MS);
}

start();

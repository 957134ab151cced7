"""The questions the shell scripts ask of tsctl's JSON answers (`tsctl --json
status` or `tsctl --json member list`, on stdin unless said otherwise).

  python3 -m tsscripts.clusterjson QUESTION [ARGS]

  one-leader            (status) exit 0 when the answering nodes agree on one
                        leader holding a lease
  leader-line           (status) "node ID (version V)" of the leader with a
                        lease, or "none"
  caught-up ID VERSION  (status) exit 0 when node ID answers, runs VERSION,
                        follows the leader and applied all but 50 of what it chose
  latest-marker         (status) the highest version marker any node reports, or "none"
  leader-hint           (status) the highest leader client address the nodes name
  own-incarnation       (status of one node) its incarnation, or ""
  member-state ID       (member list) "STATE INCARNATION HEARD_INCARNATION", STATE
                        one of absent, learner, learner-caught-up, voter (its
                        bound incarnation announced, caught up), voter-behind
  peers-for ID ADDR     (member list) the --peers of a node started now: the
                        configuration in force plus ID at ADDR
  refresh-peers DIR JSON  rewrites the --peers line of every DIR/node*.flags to
                        the configuration in force in JSON (a member list),
                        each node's own address kept
"""
import glob
import json
import os
import sys


def _nodes(doc):
    return doc.get("nodes", [])


def _leaders(nodes):
    return [n for n in nodes if n.get("role") == "leader" and n.get("lease_left_ms", 0) > 0]


def one_leader(doc):
    nodes = [n for n in _nodes(doc) if n.get("reachable", True) and "role" in n]
    leaders = _leaders(nodes)
    return len(leaders) == 1 and all(n.get("leader") == leaders[0]["id"] for n in nodes)


def leader_line(doc):
    for n in _leaders(_nodes(doc)):
        return "node %d (version %s)" % (n["id"], n["version"])
    return "none"


def caught_up(doc, nid, version):
    nodes = [n for n in _nodes(doc) if "role" in n]
    me = [n for n in nodes if n["id"] == nid]
    lead = _leaders(nodes)
    return bool(me and lead and me[0]["version"] == version and me[0]["applied_slot"] >= lead[0]["chosen_slot"] - 50
                and me[0]["leader"] == lead[0]["id"])


def latest_marker(doc):
    markers = [n["latest_marker"] for n in _nodes(doc) if n.get("latest_marker")]
    return max(markers, key=lambda v: tuple(map(int, v.split(".")))) if markers else "none"


def leader_hint(doc):
    return sorted({n.get("leader_client_addr", "") for n in _nodes(doc) if n.get("ok", True)})[-1]


def own_incarnation(doc):
    nodes = _nodes(doc)
    return nodes[0].get("incarnation", "") if nodes else ""


def member_state(doc, nid):
    m = next((m for m in doc.get("members", []) if m["id"] == nid), None)
    if m is None:
        return "absent - -"
    if m["voter"]:
        state = "voter" if m["caught_up"] and m["heard_incarnation"] == m["incarnation"] else "voter-behind"
    else:
        state = "learner-caught-up" if m["caught_up"] else "learner"
    return f"{state} {m['incarnation']} {m['heard_incarnation'] or '-'}"


def peers_for(doc, me, addr):
    peers = {m["id"]: m["peer_addr"] for m in doc["members"]}
    peers[me] = addr
    return ",".join(f"{i}={a}" for i, a in sorted(peers.items()))


def refresh_peers(cluster_dir, doc):
    config = {m["id"]: m["peer_addr"] for m in doc["members"]}
    for path in glob.glob(os.path.join(cluster_dir, "node*.flags")):
        lines = open(path).read().split("\n")
        me = int(lines[lines.index("--id") + 1])
        i = lines.index("--peers") + 1
        own = dict(p.split("=", 1) for p in lines[i].split(","))[str(me)]
        peers = dict(config)
        peers[me] = own
        lines[i] = ",".join(f"{k}={v}" for k, v in sorted(peers.items()))
        with open(path + ".tmp", "w") as f:
            f.write("\n".join(lines))
        os.replace(path + ".tmp", path)


def _stdin():
    try:
        return json.load(sys.stdin)
    except json.JSONDecodeError:
        return {}


def main(argv):
    q, args = (argv[0], argv[1:]) if argv else ("", [])
    if q == "one-leader" and not args:
        sys.exit(0 if one_leader(_stdin()) else 1)
    elif q == "leader-line" and not args:
        print(leader_line(_stdin()))
    elif q == "caught-up" and len(args) == 2:
        sys.exit(0 if caught_up(_stdin(), int(args[0]), args[1]) else 1)
    elif q == "latest-marker" and not args:
        print(latest_marker(_stdin()))
    elif q == "leader-hint" and not args:
        print(leader_hint(_stdin()))
    elif q == "own-incarnation" and not args:
        print(own_incarnation(_stdin()))
    elif q == "member-state" and len(args) == 1:
        print(member_state(_stdin(), int(args[0])))
    elif q == "peers-for" and len(args) == 2:
        print(peers_for(_stdin(), int(args[0]), args[1]))
    elif q == "refresh-peers" and len(args) == 2:
        refresh_peers(args[0], json.loads(args[1]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])

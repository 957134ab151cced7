#!/usr/bin/env bash
# The multi-host test of deploy.sh, on one machine: three "hosts", each a
# network namespace with its own address on a bridge and its own sshd.
# deploy.sh installs and starts the cluster over ssh (--no-systemd: the
# namespaces have no systemd of their own; each host gets its own install
# prefix, since they share the filesystem). Then tsctl, from the machine
# itself, must work against any one node alone: the leader hints it follows
# are the advertised addresses, not the wildcard the nodes listen on.
#
#   cluster-scripts/test-deploy.sh [--keep]     (root; iproute2 and openssh-server,
#                                               installed through setup.sh --deploy-test)
# Behind a flag of run-tests.sh (--deploy); prints PASSED or FAILED last.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
keep=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --keep) keep=1 ;;
    *) help_or_bad "$1" ;;
  esac
  shift
done
[[ $(id -u) -eq 0 ]] || { echo "test-deploy.sh: needs root (network namespaces)" >&2; exit 2; }
build_dir=$(ts_build_dir)
cluster-scripts/setup.sh --build-dir "$build_dir" --deploy-test --programs >/dev/null

tag="ts$$"
bridge="${tag}br"
# A /24 no interface of this machine uses yet.
subnet=""
for third in $(seq 200 250); do
  if ! ip -4 addr | grep -q " 10.99.$third."; then subnet="10.99.$third"; break; fi
done
[[ -n "$subnet" ]] || { echo "test-deploy.sh: no free 10.99.x.0/24" >&2; exit 2; }
work=$(mktemp -d /tmp/ts-deploy.XXXXXX)
hosts=(1 2 3)

cleanup() {
  set +e
  if [[ -f "$work/inventory" ]]; then
    cluster-scripts/deploy.sh --inventory "$work/inventory" --no-systemd --stop --ssh-opt "$ssh_opt" >/dev/null 2>&1
  fi
  for h in "${hosts[@]}"; do
    [[ -f "$work/sshd$h.pid" ]] && kill "$(cat "$work/sshd$h.pid")" 2>/dev/null
    ip netns pids "$tag-h$h" 2>/dev/null | xargs -r kill -9 2>/dev/null
    ip netns del "$tag-h$h" 2>/dev/null
  done
  ip link del "$bridge" 2>/dev/null
  if [[ $keep -eq 1 ]]; then echo "test-deploy.sh: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

ip link add "$bridge" type bridge
ip addr add "$subnet.1/24" dev "$bridge"
ip link set "$bridge" up
ssh-keygen -q -t ed25519 -N "" -f "$work/client_key"
ssh-keygen -q -t ed25519 -N "" -f "$work/host_key"
cp "$work/client_key.pub" "$work/authorized_keys"
mkdir -p /run/sshd
ssh_opt="-i $work/client_key -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout=5 -o GSSAPIAuthentication=no"
: >"$work/inventory"
for h in "${hosts[@]}"; do
  ns="$tag-h$h" addr="$subnet.1$h"
  ip netns add "$ns"
  ip link add "$tag-v$h" type veth peer name eth0 netns "$ns"
  ip link set "$tag-v$h" master "$bridge" up
  ip -n "$ns" addr add "$addr/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
  cat >"$work/sshd$h.conf" <<CONF
ListenAddress $addr
Port 22
HostKey $work/host_key
PidFile $work/sshd$h.pid
AuthorizedKeysFile $work/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
UseDNS no
StrictModes no
CONF
  ip netns exec "$ns" /usr/sbin/sshd -f "$work/sshd$h.conf"
  echo "$h root@$addr $addr $work/host$h" >>"$work/inventory"
done

fail() { echo "test-deploy.sh: FAILED: $*"; exit 1; }
# sshd is up when it answers.
for h in "${hosts[@]}"; do
  ok=0
  for _ in $(seq 50); do
    # shellcheck disable=SC2086
    if ssh $ssh_opt -o BatchMode=yes "root@$subnet.1$h" true 2>/dev/null; then ok=1; break; fi
    sleep 0.1
  done
  [[ $ok -eq 1 ]] || fail "sshd on host $h did not answer"
done

echo "test-deploy.sh: inventory:"; sed 's/^/  /' "$work/inventory"
endpoints=$(cluster-scripts/deploy.sh --inventory "$work/inventory" --build-dir "$build_dir" --no-systemd \
  --ssh-opt "$ssh_opt" --wait-s 60 | tail -n 1) || fail "deploy.sh failed"
tsctl="$build_dir/node/tsctl/tsctl"
[[ -f "$work/host1/usr/local/bin/tsnode" ]] || fail "deploy.sh did not install through ssh"
grep -q "advertise-client-addr = \"$subnet.11:7100\"" "$work/host1/etc/tsnode/tsnode.toml" || fail "host 1's config"
for h in "${hosts[@]}"; do
  one="$subnet.1$h:7100"
  "$tsctl" --endpoints "$one" put "key$h" "value$h" >/dev/null || fail "put through node $h alone ($one)"
  for g in "${hosts[@]}"; do
    got=$("$tsctl" --endpoints "$subnet.1$g:7100" get "key$h") || fail "get key$h through node $g"
    [[ "$got" == "value$h" ]] || fail "get key$h through node $g: '$got'"
  done
done
leader_hint=$("$tsctl" --endpoints "$endpoints" --json status | tspy clusterjson leader-hint)
[[ "$leader_hint" == "$subnet".1?:7100 ]] || fail "leader hint '$leader_hint' is not an advertised address"
"$tsctl" --endpoints "$endpoints" status
echo "test-deploy.sh: PASSED: 3 hosts ($subnet.11-13) deployed over ssh; tsctl works through any node alone; leader hint $leader_hint"

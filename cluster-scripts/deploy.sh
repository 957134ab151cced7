#!/usr/bin/env bash
# Installs and starts a tsnode cluster on several hosts from one inventory
# file, over ssh, with listen and advertise addresses set so that clients
# and peers on other hosts reach every node.
#
#   deploy.sh --inventory FILE [options]     install, configure, start, wait for a quorum
#   deploy.sh --inventory FILE --stop        stop every node (the data stays)
#
# Inventory: one host a line (# starts a comment), whitespace-separated:
#   ID  SSH_TARGET  ADDRESS  [PREFIX]
#   1   root@10.0.0.11  10.0.0.11
#   2   root@10.0.0.12  10.0.0.12  /srv/ts
# ID is the node id (1..63); SSH_TARGET what ssh dials; ADDRESS the address
# the other hosts and the clients reach the host at (advertised); PREFIX the
# root everything is installed under (default /: /usr/local/bin,
# /etc/tsnode, /var/lib/tsnode). Give each host its own PREFIX when several
# "hosts" share one filesystem (tests).
#
# Options:
#   --build-dir DIR     binaries from here (default: $BUILD_DIR, else build; setup.sh --programs
#                       runs their incremental build first)
#   --cluster-id NAME   (default ts)
#   --peer-port P       (default 7000)   --client-port P (default 7100)
#   --no-systemd        start tsnode with nohup and a pid file instead of the systemd unit
#                       (hosts without systemd as init, such as network namespaces)
#   --ssh-opt OPT       an extra ssh/scp option (repeatable), e.g. --ssh-opt "-i key"
#   --tsnode-arg ARG    an extra tsnode flag for every node (repeatable)
#   --wait-s N          how long to wait for a quorum (default 60)
# With systemd, each host gets the unit tsnode.service (User=tsnode, created if
# missing) and its config in PREFIX/etc/tsnode/tsnode.toml. Prints the
# client endpoints (comma-separated) last, for tsctl --endpoints.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

inventory="" build_dir="${BUILD_DIR:-build}" cluster_id=ts peer_port=7000 client_port=7100
systemd=1 stop=0 wait_s=60 ssh_opts=() tsnode_args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --inventory) inventory="${2:?}"; shift ;;
    --build-dir) build_dir="${2:?}"; shift ;;
    --cluster-id) cluster_id="${2:?}"; shift ;;
    --peer-port) peer_port="${2:?}"; shift ;;
    --client-port) client_port="${2:?}"; shift ;;
    --no-systemd) systemd=0 ;;
    --ssh-opt) read -r -a more <<<"${2:?}"; ssh_opts+=("${more[@]}"); shift ;;
    --tsnode-arg) tsnode_args+=("${2:?}"); shift ;;
    --wait-s) wait_s="${2:?}"; shift ;;
    --stop) stop=1 ;;
    *) help_or_bad "$1" ;;
  esac
  shift
done
[[ -n "$inventory" ]] || die "--inventory FILE is required (see --help)"
[[ -r "$inventory" ]] || die "cannot read the inventory $inventory"
build_dir=$(absolute "$build_dir")

ids=() targets=() addrs=() prefixes=()
while read -r id target addr prefix rest; do
  [[ -z "${id:-}" || "$id" == \#* ]] && continue
  [[ "$id" =~ ^[0-9]+$ && "$id" -ge 1 && "$id" -le 63 ]] || die "$inventory: node id '$id' is not 1..63"
  [[ -n "${addr:-}" ]] || die "$inventory: node $id needs ID SSH_TARGET ADDRESS [PREFIX]"
  [[ -z "${rest:-}" ]] || die "$inventory: node $id: unexpected '$rest'"
  ids+=("$id") targets+=("$target") addrs+=("$addr") prefixes+=("${prefix:-/}")
done <"$inventory"
[[ ${#ids[@]} -gt 0 ]] || die "$inventory lists no host"
[[ $(printf '%s\n' "${ids[@]}" | sort | uniq -d) == "" ]] || die "$inventory lists a node id twice"

on() {  # on INDEX COMMAND...: run a shell command on host INDEX
  local i=$1; shift
  ssh -o BatchMode=yes "${ssh_opts[@]}" "${targets[$i]}" "$@"
}
dir_of() { local p=${prefixes[$1]%/}; echo "$p$2"; }  # dir_of INDEX /path

if [[ $stop -eq 1 ]]; then
  for i in "${!ids[@]}"; do
    if [[ $systemd -eq 1 ]]; then
      on "$i" "systemctl stop tsnode" || echo "deploy.sh: node ${ids[$i]}: stop failed" >&2
    else
      pidfile=$(dir_of "$i" /run/tsnode.pid)
      on "$i" "if [ -f $pidfile ]; then kill \$(cat $pidfile) 2>/dev/null; for _ in \$(seq 100); do kill -0 \$(cat $pidfile) 2>/dev/null || break; sleep 0.1; done; rm -f $pidfile; fi" ||
        echo "deploy.sh: node ${ids[$i]}: stop failed" >&2
    fi
    echo "deploy.sh: node ${ids[$i]} on ${targets[$i]} stopped"
  done
  exit 0
fi

# Build and stage the install tree once (the install target).
BUILD_DIR="$build_dir" build_programs
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cmake --install "$build_dir" --prefix "$stage/usr/local" >/dev/null
peers=""
endpoints=""
for i in "${!ids[@]}"; do
  peers+="${peers:+,}${ids[$i]}=${addrs[$i]}:$peer_port"
  endpoints+="${endpoints:+,}${addrs[$i]}:$client_port"
done

# One host: install, configure, start. Hosts go in parallel, so that every
# bootstrap member is up before a genesis decree exists (a member that
# starts after it joins as a learner and is bound again, which is safe but
# slower and logged as a rebuild).
deploy_host() {
  local i=$1
  local id=${ids[$i]} addr=${addrs[$i]}
  local bin etc data pidfile log extra
  bin=$(dir_of "$i" /usr/local/bin) etc=$(dir_of "$i" /etc/tsnode) data=$(dir_of "$i" /var/lib/tsnode)
  echo "deploy.sh: node $id: installing on ${targets[$i]} under ${prefixes[$i]}"
  on "$i" "mkdir -p $(dir_of "$i" /usr/local) $etc $(dir_of "$i" /run) $(dir_of "$i" /var/log)"
  tar -C "$stage/usr/local" -cf - bin share | on "$i" "tar -C $(dir_of "$i" /usr/local) -xf -"
  # The programs need this machine's shared libraries (tcmalloc, TLS,
  # compression, ...): name the Debian packages a host lacks, rather than
  # let tsnode fail to start with a loader error.
  local missing packages
  missing=$(on "$i" "ldd $bin/tsnode $bin/tsctl 2>/dev/null || true" | awk '/=> not found/ {print $1}' | sort -u | tr '\n' ' ')
  if [[ -n "$missing" ]]; then
    packages=$(for so in $missing; do { dpkg -S "*/$so" 2>/dev/null || true; } | head -1 | cut -d: -f1; done | sort -u | tr '\n' ' ')
    die "node $id: ${targets[$i]} lacks shared libraries tsnode needs: ${missing% }; install them there (Debian packages: ${packages:-not found here})"
  fi
  # The first start of a new cluster's member is "new"; a data dir that holds
  # state ignores it, so deploying again restarts the same cluster.
  {
    echo "# written by deploy.sh from $(basename "$inventory"); see tsnode --help"
    echo "id = $id"
    echo "peers = \"$peers\""
    echo "peer-listen-addr = \"0.0.0.0:$peer_port\""
    echo "client-addr = \"0.0.0.0:$client_port\""
    echo "advertise-client-addr = \"$addr:$client_port\""
    echo "data-dir = \"$data\""
    echo "cluster-id = \"$cluster_id\""
    echo "initial-cluster-state = \"new\""
  } | on "$i" "cat > $etc/tsnode.toml"
  if [[ $systemd -eq 1 ]]; then
    [[ "${prefixes[$i]}" == / ]] || die "node $id: the systemd unit expects PREFIX /; use --no-systemd for another prefix"
    on "$i" "id tsnode >/dev/null 2>&1 || useradd --system --home-dir /var/lib/tsnode --shell /usr/sbin/nologin tsnode
             cp /usr/local/lib/systemd/system/tsnode.service /etc/systemd/system/tsnode.service
             systemctl daemon-reload && systemctl enable --now tsnode && systemctl restart tsnode"
  else
    pidfile=$(dir_of "$i" /run/tsnode.pid) log=$(dir_of "$i" /var/log/tsnode.log)
    extra=$(printf ' %q' "${tsnode_args[@]}")
    [[ ${#tsnode_args[@]} -gt 0 ]] || extra=""
    on "$i" "if [ -f $pidfile ] && kill -0 \$(cat $pidfile) 2>/dev/null; then echo 'already running'; else
               setsid nohup $bin/tsnode --config $etc/tsnode.toml$extra >>$log 2>&1 </dev/null & echo \$! > $pidfile; fi"
  fi
}
pids=()
for i in "${!ids[@]}"; do
  deploy_host "$i" &
  pids+=($!)
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || die "node ${ids[$i]} on ${targets[$i]}: installing or starting failed (see above)"
done

tsctl="$stage/usr/local/bin/tsctl"
echo "deploy.sh: waiting up to ${wait_s} s for a quorum on $endpoints"
deadline=$((SECONDS + wait_s))
until "$tsctl" --endpoints "$endpoints" --timeout-ms 2000 status >/dev/null 2>&1; do
  if [[ $SECONDS -ge $deadline ]]; then
    "$tsctl" --endpoints "$endpoints" --timeout-ms 2000 status >&2 || true
    die "no quorum after ${wait_s} s (see each node's log: journalctl -u tsnode, or PREFIX/var/log/tsnode.log)"
  fi
  sleep 0.5
done
"$tsctl" --endpoints "$endpoints" status
echo "$endpoints"

#!/usr/bin/env bash
# Makes a CA and the certificates of a cluster for mutual TLS (tsnode
# --tls-ca/--tls-cert/--tls-key; tsctl, tsbench and tsagent --cacert/--cert/
# --key), with openssl. Keys are ECDSA P-256, readable by their owner only.
#
#   cluster-scripts/gen-certs.sh DIR [--cluster-id ID] [--nodes N | --node-ids 1,2,5] [--days D]
#                                [--hosts LIST]
#
#   DIR               where the files go (created); an existing CA there is reused,
#                     so nodes added later get certificates the cluster trusts
#   --cluster-id ID   the cluster's id (tsnode --cluster-id; default: ts)
#   --nodes N         certificates for nodes 1..N (default 3)
#   --node-ids LIST   ... or for these node ids
#   --days D          validity of new certificates (default 825)
#   --hosts LIST      names and addresses HTTPS clients (curl) reach the nodes at,
#                     written in the node certificates (default localhost,127.0.0.1,::1;
#                     nodes and tsctl check the subject instead, not these)
#
# Files: ca.crt, ca.key; node-ID.crt and node-ID.key for each node (subject
# CN=node-ID, O=ID of the cluster, OU=node: a node may claim only its own id);
# client-read, client-write and client-admin .crt/.key (CN=tsctl-ROLE,
# OU=ROLE: the role the client port and the HTTP API grant). A certificate
# that already exists is left as it is.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

dir=""
cluster_id=ts
nodes=3
node_ids=""
days=825
hosts=localhost,127.0.0.1,::1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --cluster-id) [[ $# -ge 2 && -n "$2" ]] || bad "--cluster-id needs an id"; cluster_id=$2; shift ;;
    --nodes) [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || bad "--nodes needs a count"; nodes=$2; shift ;;
    --node-ids) [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || bad "--node-ids needs ids like 1,2,5"
                node_ids=$2; shift ;;
    --hosts) [[ $# -ge 2 && -n "$2" ]] || bad "--hosts needs a list"; hosts=$2; shift ;;
    --days) [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || bad "--days needs a number"; days=$2; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) bad "unknown argument '$1'" ;;
    *) [[ -z "$dir" ]] || bad "one directory only"; dir=$1 ;;
  esac
  shift
done
[[ -n "$dir" ]] || bad "no directory given"
dir=$(from_caller "$dir")  # DIR is taken from where the script was run
[[ "$cluster_id" =~ ^[A-Za-z0-9._-]+$ ]] || bad "--cluster-id '$cluster_id': letters, digits, '.', '_' and '-' only"
command -v openssl >/dev/null || die "openssl is missing: cluster-scripts/setup.sh --no-build installs it"
[[ -n "$node_ids" ]] || node_ids=$(seq -s, 1 "$nodes")

mkdir -p "$dir"
umask 077
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [[ ! -f "$dir/ca.crt" || ! -f "$dir/ca.key" ]]; then
  openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -sha256 -days "$days" \
    -subj "/O=$cluster_id/OU=ca/CN=$cluster_id cluster CA" -keyout "$dir/ca.key" -out "$dir/ca.crt" 2>"$tmp/err" ||
    die "openssl could not make the CA: $(cat "$tmp/err")"
  echo "gen-certs.sh: CA $dir/ca.crt (O=$cluster_id)"
fi

# The subjectAltName of node certificates: DNS names and IP addresses.
san=""
IFS=, read -r -a host_list <<<"$hosts"
for h in "${host_list[@]}"; do
  if [[ "$h" =~ ^[0-9.]+$ || "$h" == *:* ]]; then san+="${san:+,}IP:$h"; else san+="${san:+,}DNS:$h"; fi
done

# cert NAME SUBJECT [SAN]: NAME.key and NAME.crt signed by the CA, for both
# TLS client and server use (a node is both).
cert() {
  local name=$1 subject=$2 alt=${3:-}
  [[ -f "$dir/$name.crt" && -f "$dir/$name.key" ]] && return 0
  printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n' \
    >"$tmp/ext"
  [[ -z "$alt" ]] || echo "subjectAltName=$alt" >>"$tmp/ext"
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -sha256 -subj "$subject" \
    -keyout "$dir/$name.key" -out "$tmp/$name.csr" 2>"$tmp/err" || die "openssl: $name: $(cat "$tmp/err")"
  openssl x509 -req -in "$tmp/$name.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
    -CAserial "$tmp/serial" -days "$days" -sha256 -extfile "$tmp/ext" -out "$dir/$name.crt" 2>"$tmp/err" ||
    die "openssl: signing $name: $(cat "$tmp/err")"
  echo "gen-certs.sh: $dir/$name.crt ($subject)"
}

IFS=, read -r -a ids <<<"$node_ids"
for id in "${ids[@]}"; do cert "node-$id" "/O=$cluster_id/OU=node/CN=node-$id" "$san"; done
for role in read write admin; do cert "client-$role" "/O=$cluster_id/OU=$role/CN=tsctl-$role"; done
chmod 644 "$dir"/*.crt

// Client endpoints: where tsctl, tsbench and other tools find the cluster's
// client ports. Three sources, first non-empty one wins:
//   1. the --endpoints flag ("host:port,host:port"),
//   2. the environment variable $TSCTL_ENDPOINTS (same syntax),
//   3. the file endpoints in $CLUSTER_DIR if that is set, else
//      .cluster/endpoints in the current directory: what
//      cluster-scripts/local-cluster.sh writes in its cluster directory (one
//      host:port per line; blank lines and '#' comments allowed).
// A source that is present but malformed is an error: it is never skipped in
// favour of the next one, so a typo cannot silently send commands to another
// cluster.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "consensus/status.h"
#include "rpc/transport.h"

namespace ts::client {

inline constexpr const char* kEndpointsEnvVar = "TSCTL_ENDPOINTS";
inline constexpr const char* kEndpointsFile = ".cluster/endpoints";
inline constexpr const char* kClusterDirEnvVar = "CLUSTER_DIR";  // local-cluster.sh's directory

// Parses a comma-separated list "host:port,host:port". Whitespace around
// items is ignored; an empty list, an empty item, a bad host:port or a
// duplicate endpoint is InvalidArgument naming `origin` (e.g. "--endpoints")
// and the offending text.
StatusOr<std::vector<rpc::HostPort>> ParseEndpointList(std::string_view text, std::string_view origin);

// Parses the endpoints file format: one host:port per line, blank lines and
// lines whose first non-blank character is '#' ignored, trailing "# ..."
// comments stripped. Errors name `origin` and the line number. A file with
// no endpoint at all is InvalidArgument.
StatusOr<std::vector<rpc::HostPort>> ParseEndpointsFile(std::string_view contents, std::string_view origin);

// Resolves the endpoints by the precedence above. `flag_value` is the
// --endpoints flag as given (empty: not given). Reads $TSCTL_ENDPOINTS and
// $CLUSTER_DIR/endpoints or ./.cluster/endpoints. If no source gives
// an endpoint the error names all three sources.
StatusOr<std::vector<rpc::HostPort>> ResolveEndpoints(const std::string& flag_value);

// TLS to the cluster's client ports: the CA certificate, the client's
// certificate (its OU names its role: read, write or admin) and its key, as
// PEM files. Each comes from its flag, else from $TSCTL_CACERT, $TSCTL_CERT
// and $TSCTL_KEY. None given: plaintext (nullptr). Some but not all, or a
// file that does not load: InvalidArgument saying which.
inline constexpr const char* kCaCertEnvVar = "TSCTL_CACERT";
inline constexpr const char* kCertEnvVar = "TSCTL_CERT";
inline constexpr const char* kKeyEnvVar = "TSCTL_KEY";
StatusOr<std::shared_ptr<rpc::TlsContext>> ResolveClientTls(const std::string& cacert_flag,
                                                           const std::string& cert_flag, const std::string& key_flag);
// The help text of the three flags and their variables.
inline constexpr const char* kTlsFlagsHelp =
    "TLS: --cacert, --cert and --key (PEM files), else $TSCTL_CACERT, $TSCTL_CERT and $TSCTL_KEY; none: plaintext";

// Joins endpoints as "a:1,b:2" (the flag syntax).
std::string JoinEndpoints(const std::vector<rpc::HostPort>& endpoints);

}  // namespace ts::client

// Endpoint resolution for the client tools; see endpoints.h.
#include "node/client/endpoints.h"

#include <cassert>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace ts::client {

namespace {

// A file larger than this is not an endpoints file; refuse rather than read
// an arbitrary file into memory.
constexpr size_t kEndpointsFileBytesMax = 1 << 20;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Parses one endpoint and appends it unless it is already listed (a duplicate
// is a mistake worth reporting: it would skew leader discovery).
Status AddEndpoint(std::string_view item, const std::string& where, std::set<std::string>* seen,
                   std::vector<rpc::HostPort>* out) {
  auto hp = rpc::ParseHostPort(item);
  if (!hp.ok()) return Status::InvalidArgument(where + ": " + hp.status().message());
  if (hp->host.empty()) return Status::InvalidArgument(where + ": '" + std::string(item) + "' has no host");
  if (!seen->insert(hp->ToString()).second) {
    return Status::InvalidArgument(where + ": endpoint " + hp->ToString() + " is listed twice");
  }
  out->push_back(std::move(*hp));
  return Status::Ok();
}

}  // namespace

StatusOr<std::vector<rpc::HostPort>> ParseEndpointList(std::string_view text, std::string_view origin) {
  std::vector<rpc::HostPort> out;
  std::set<std::string> seen;
  const std::string where(origin);
  if (Trim(text).empty()) return Status::InvalidArgument(where + ": empty endpoint list");
  size_t pos = 0;
  while (true) {
    size_t comma = text.find(',', pos);
    std::string_view item =
        Trim(text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos));
    if (item.empty()) {
      return Status::InvalidArgument(where + ": empty item in endpoint list '" + std::string(text) + "'");
    }
    Status s = AddEndpoint(item, where, &seen, &out);
    if (!s.ok()) return s;
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  assert(!out.empty());
  return out;
}

StatusOr<std::vector<rpc::HostPort>> ParseEndpointsFile(std::string_view contents, std::string_view origin) {
  std::vector<rpc::HostPort> out;
  std::set<std::string> seen;
  size_t pos = 0;
  int line_no = 0;
  while (pos < contents.size()) {
    size_t nl = contents.find('\n', pos);
    std::string_view line = contents.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? contents.size() : nl + 1;
    ++line_no;
    size_t hash = line.find('#');
    if (hash != std::string_view::npos) line = line.substr(0, hash);
    line = Trim(line);
    if (line.empty()) continue;
    Status s = AddEndpoint(line, std::string(origin) + ":" + std::to_string(line_no), &seen, &out);
    if (!s.ok()) return s;
  }
  if (out.empty()) return Status::InvalidArgument(std::string(origin) + ": no endpoint listed");
  return out;
}

StatusOr<std::vector<rpc::HostPort>> ResolveEndpoints(const std::string& flag_value) {
  if (!Trim(flag_value).empty()) return ParseEndpointList(flag_value, "--endpoints");

  const char* env = std::getenv(kEndpointsEnvVar);
  if (env != nullptr && !Trim(env).empty()) return ParseEndpointList(env, std::string("$") + kEndpointsEnvVar);

  const char* cluster_dir = std::getenv(kClusterDirEnvVar);
  const std::string file = cluster_dir != nullptr && !Trim(cluster_dir).empty()
                               ? std::string(cluster_dir) + "/endpoints"
                               : std::string(kEndpointsFile);
  errno = 0;  // ifstream reports no reason; open(2)'s errno is the best we have
  std::ifstream in(file, std::ios::binary);
  if (in) {
    std::string contents;
    contents.resize(kEndpointsFileBytesMax + 1);
    in.read(contents.data(), static_cast<std::streamsize>(contents.size()));
    if (in.bad()) return Status::IoError(file + ": read failed");
    contents.resize(static_cast<size_t>(in.gcount()));
    if (contents.size() > kEndpointsFileBytesMax) {
      return Status::InvalidArgument(file + ": larger than " + std::to_string(kEndpointsFileBytesMax) +
                                     " bytes; not an endpoints file");
    }
    return ParseEndpointsFile(contents, file);
  }
  int err = errno;
  std::string why = err == ENOENT || err == 0 ? "it does not exist" : std::strerror(err);
  return Status::InvalidArgument(std::string("no cluster endpoints: pass --endpoints host:port,..., set $") +
                                 kEndpointsEnvVar + ", or have the file " + file + " (" + why +
                                 "; cluster-scripts/local-cluster.sh start 3 writes it, in $" + kClusterDirEnvVar +
                                 " if set)");
}

std::string JoinEndpoints(const std::vector<rpc::HostPort>& endpoints) {
  std::string out;
  for (const rpc::HostPort& e : endpoints) {
    if (!out.empty()) out += ',';
    out += e.ToString();
  }
  return out;
}

StatusOr<std::shared_ptr<rpc::TlsContext>> ResolveClientTls(const std::string& cacert_flag,
                                                           const std::string& cert_flag, const std::string& key_flag) {
  auto pick = [](const std::string& flag, const char* var) {
    if (!flag.empty()) return flag;
    const char* env = std::getenv(var);
    return std::string(env != nullptr ? env : "");
  };
  rpc::TlsFiles files{pick(cacert_flag, kCaCertEnvVar), pick(cert_flag, kCertEnvVar), pick(key_flag, kKeyEnvVar)};
  if (files.empty()) return std::shared_ptr<rpc::TlsContext>();
  if (files.ca.empty() || files.cert.empty() || files.key.empty()) {
    return Status::InvalidArgument(std::string("TLS needs all three of --cacert, --cert and --key (or $") +
                                   kCaCertEnvVar + ", $" + kCertEnvVar + ", $" + kKeyEnvVar + ")");
  }
  return rpc::TlsContext::Load(files);
}

}  // namespace ts::client

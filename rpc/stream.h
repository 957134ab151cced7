// Stream: one TCP connection, plain or TLS (Asio's SSL over OpenSSL), and
// the identity a TLS peer's certificate names. Connection reads and writes
// frames on it; whoever accepts or dials a socket wraps it in a Stream and
// runs Handshake before handing it to a Connection.
//
// Certificates (cluster-scripts/gen-certs.sh makes them): every party has a
// certificate signed by the cluster's CA. Its subject names
//   O  = the cluster id (tsnode --cluster-id),
//   OU = "node" for a node, else the client's role: read, write or admin,
//   CN = "node-<id>" for a node, any name for a client.
// Both sides present one (mutual TLS); a handshake without a certificate
// signed by the CA fails. What the names must be is checked by the owner of
// the stream (PeerTransport, ClientServer, the clients), not here.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include <asio.hpp>
#include <asio/ssl.hpp>

#include "consensus/status.h"

namespace ts::rpc {

// The files of one party's TLS setup, all PEM.
struct TlsFiles {
  std::string ca;    // the CA certificate(s) peers must be signed by
  std::string cert;  // this party's certificate (chain)
  std::string key;   // its private key
  bool empty() const { return ca.empty() && cert.empty() && key.empty(); }
};

// The subject of a verified peer certificate.
struct CertIdentity {
  bool present = false;  // false on a plain stream
  std::string common_name;
  std::string organization;
  std::string unit;
  std::string ToString() const;  // "CN=node-2, O=ts, OU=node"
};

// The subject of a certificate (null: not present).
CertIdentity IdentityOf(X509* cert);

// A loaded TLS setup, shared by every stream of a process; one context acts
// as server (accepted sockets) and as client (dialled ones). TLS 1.2 or
// newer; the peer must present a certificate the CA signed.
class TlsContext {
 public:
  // InvalidArgument naming the file and OpenSSL's reason if one cannot be
  // read, or if the key does not match the certificate. All three are needed.
  static StatusOr<std::shared_ptr<TlsContext>> Load(const TlsFiles& files);
  asio::ssl::context& context() { return ctx_; }
  // The subject of our own certificate.
  const CertIdentity& own() const { return own_; }

 private:
  TlsContext() : ctx_(asio::ssl::context::tls) {}
  asio::ssl::context ctx_;
  CertIdentity own_;
};

class Stream : public std::enable_shared_from_this<Stream> {
 public:
  using tcp = asio::ip::tcp;
  // tls null: a plain stream.
  Stream(tcp::socket socket, std::shared_ptr<TlsContext> tls);

  // The TLS handshake, as the accepting (server) or dialling side, within
  // `timeout` (the socket is closed when it expires); on success the peer's
  // identity is known. A plain stream is done at once (the callback is
  // posted, never run inside this call). `done` gets Unavailable with
  // OpenSSL's reason on failure.
  void Handshake(bool server, std::chrono::milliseconds timeout, std::function<void(Status)> done);

  bool tls() const { return tls_ != nullptr; }
  const CertIdentity& peer_identity() const { return peer_; }
  tcp::socket& socket() { return tls_ ? tls_->next_layer() : plain_; }
  const asio::any_io_executor& executor() const { return executor_; }
  void Close();

  // Runs f on the stream to read and write: the TLS stream or the socket.
  template <class F>
  void Visit(F&& f) {
    if (tls_) {
      f(*tls_);
    } else {
      f(plain_);
    }
  }

 private:
  asio::any_io_executor executor_;
  tcp::socket plain_;  // the socket of a plain stream (moved into tls_ otherwise)
  std::shared_ptr<TlsContext> context_;
  std::unique_ptr<asio::ssl::stream<tcp::socket>> tls_;
  CertIdentity peer_;
};

}  // namespace ts::rpc

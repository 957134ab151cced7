// Stream and TlsContext; see stream.h.
#include "rpc/stream.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

namespace ts::rpc {

namespace {

std::string SubjectField(X509_NAME* name, int nid) {
  if (name == nullptr) return {};
  int len = X509_NAME_get_text_by_NID(name, nid, nullptr, 0);
  if (len < 0) return {};
  std::string out(static_cast<size_t>(len) + 1, '\0');
  X509_NAME_get_text_by_NID(name, nid, out.data(), len + 1);
  out.resize(static_cast<size_t>(len));
  return out;
}

}  // namespace

CertIdentity IdentityOf(X509* cert) {
  CertIdentity id;
  if (cert == nullptr) return id;
  X509_NAME* name = X509_get_subject_name(cert);
  id.present = true;
  id.common_name = SubjectField(name, NID_commonName);
  id.organization = SubjectField(name, NID_organizationName);
  id.unit = SubjectField(name, NID_organizationalUnitName);
  return id;
}

namespace {

// OpenSSL's reason for the last failure, for error messages.
std::string OpenSslReason(const std::error_code& ec) {
  std::string why = ec.message();
  if (ec.category() == asio::error::get_ssl_category()) {
    char buf[256];
    ERR_error_string_n(static_cast<unsigned long>(ec.value()), buf, sizeof(buf));
    why = buf;
  }
  return why;
}

}  // namespace

std::string CertIdentity::ToString() const {
  if (!present) return "no certificate";
  return "CN=" + common_name + ", O=" + organization + ", OU=" + unit;
}

StatusOr<std::shared_ptr<TlsContext>> TlsContext::Load(const TlsFiles& files) {
  if (files.ca.empty() || files.cert.empty() || files.key.empty()) {
    return Status::InvalidArgument("TLS needs all three files: the CA certificate, this party's certificate and its key");
  }
  std::shared_ptr<TlsContext> t(new TlsContext());
  asio::ssl::context& ctx = t->ctx_;
  std::error_code ec;
  ctx.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                      asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1,
                  ec);
  auto failed = [&](const std::string& what, const std::string& file) {
    return Status::InvalidArgument("TLS: cannot " + what + " " + file + ": " + OpenSslReason(ec));
  };
  if (ctx.load_verify_file(files.ca, ec); ec) return failed("read the CA certificate", files.ca);
  if (ctx.use_certificate_chain_file(files.cert, ec); ec) return failed("read the certificate", files.cert);
  if (ctx.use_private_key_file(files.key, asio::ssl::context::pem, ec); ec) return failed("read the key", files.key);
  if (SSL_CTX_check_private_key(ctx.native_handle()) != 1) {
    return Status::InvalidArgument("TLS: the key " + files.key + " does not belong to the certificate " + files.cert);
  }
  ctx.set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert, ec);
  t->own_ = IdentityOf(SSL_CTX_get0_certificate(ctx.native_handle()));
  return t;
}

Stream::Stream(tcp::socket socket, std::shared_ptr<TlsContext> tls)
    : executor_(socket.get_executor()), plain_(std::move(socket)), context_(std::move(tls)) {
  if (context_) tls_ = std::make_unique<asio::ssl::stream<tcp::socket>>(std::move(plain_), context_->context());
}

void Stream::Handshake(bool server, std::chrono::milliseconds timeout, std::function<void(Status)> done) {
  if (!tls_) {
    asio::post(executor_, [done = std::move(done)] { done(Status::Ok()); });
    return;
  }
  auto timer = std::make_shared<asio::steady_timer>(executor_);
  timer->expires_after(timeout);
  auto timed_out = std::make_shared<bool>(false);
  timer->async_wait([self = shared_from_this(), timed_out](const std::error_code& ec) {
    if (ec) return;
    *timed_out = true;
    self->Close();  // the handshake's handler sees the error
  });
  tls_->async_handshake(server ? asio::ssl::stream_base::server : asio::ssl::stream_base::client,
                        [self = shared_from_this(), timer, timed_out, timeout,
                         done = std::move(done)](const std::error_code& ec) {
                          timer->cancel();
                          if (*timed_out) {
                            done(Status::Unavailable("TLS handshake not done within " +
                                                     std::to_string(timeout.count()) + " ms"));
                            return;
                          }
                          if (ec) {
                            done(Status::Unavailable("TLS handshake failed: " + OpenSslReason(ec)));
                            return;
                          }
                          X509* cert = SSL_get1_peer_certificate(self->tls_->native_handle());
                          self->peer_ = IdentityOf(cert);
                          X509_free(cert);
                          done(Status::Ok());
                        });
}

void Stream::Close() {
  std::error_code ec;
  socket().shutdown(tcp::socket::shutdown_both, ec);
  socket().close(ec);
}

}  // namespace ts::rpc

// TestCa: certificate authorities and server certificates made with OpenSSL inside the test (EC
// P-256 keys, SHA-256 signatures), written as PEM files: for TLS tests against a local HTTPS
// server, including certificates that must be refused (another CA, another host, expired).
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

namespace netqos::testing {

class TestCa {
 public:
  // A self-signed CA certificate with this common name, valid from a day ago for ten days.
  explicit TestCa(const std::string& common_name) : key_(NewKey()), cert_(X509_new()) {
    Fill(cert_.get(), common_name, key_.get(), -1, 10);
    X509_set_issuer_name(cert_.get(), X509_get_subject_name(cert_.get()));
    AddExtension(cert_.get(), cert_.get(), NID_basic_constraints, "critical,CA:TRUE");
    AddExtension(cert_.get(), cert_.get(), NID_key_usage, "critical,keyCertSign,cRLSign");
    AddExtension(cert_.get(), cert_.get(), NID_subject_key_identifier, "hash");
    Sign(cert_.get(), key_.get());
  }

  struct Server {
    std::string common_name = "kubelet";
    std::string subject_alt_names;  // OpenSSL's syntax: "IP:127.0.0.1,DNS:localhost"
    long valid_from_days = -1;      // relative to now
    long valid_until_days = 10;
  };

  // Writes the CA certificate (the file a client trusts).
  void WriteCert(const std::string& path) const { WritePem(path, cert_.get(), nullptr); }

  // Issues a server certificate (serverAuth) and writes it and its key.
  void Issue(const Server& s, const std::string& cert_path, const std::string& key_path) const {
    KeyPtr key = NewKey();
    CertPtr cert(X509_new());
    Fill(cert.get(), s.common_name, key.get(), s.valid_from_days, s.valid_until_days);
    X509_set_issuer_name(cert.get(), X509_get_subject_name(cert_.get()));
    AddExtension(cert_.get(), cert.get(), NID_basic_constraints, "critical,CA:FALSE");
    AddExtension(cert_.get(), cert.get(), NID_key_usage, "critical,digitalSignature");
    AddExtension(cert_.get(), cert.get(), NID_ext_key_usage, "serverAuth");
    AddExtension(cert_.get(), cert.get(), NID_authority_key_identifier, "keyid:always");
    if (!s.subject_alt_names.empty()) {
      AddExtension(cert_.get(), cert.get(), NID_subject_alt_name, s.subject_alt_names);
    }
    Sign(cert.get(), key_.get());
    WritePem(cert_path, cert.get(), nullptr);
    WritePem(key_path, nullptr, key.get());
  }

 private:
  struct KeyFree {
    void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
  };
  struct CertFree {
    void operator()(X509* c) const { X509_free(c); }
  };
  using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;
  using CertPtr = std::unique_ptr<X509, CertFree>;

  static void Check(bool ok, const char* what) {
    if (!ok) throw std::runtime_error(std::string("test PKI: ") + what + " failed");
  }

  static KeyPtr NewKey() {
    KeyPtr key(EVP_EC_gen("P-256"));
    Check(key != nullptr, "EC key generation");
    return key;
  }

  static void Fill(X509* cert, const std::string& cn, EVP_PKEY* key, long from_days,
                   long until_days) {
    static long serial = 1;
    Check(X509_set_version(cert, 2) == 1, "X509_set_version");
    Check(ASN1_INTEGER_set(X509_get_serialNumber(cert), ++serial) == 1, "serial");
    Check(X509_gmtime_adj(X509_getm_notBefore(cert), from_days * 86400) != nullptr, "notBefore");
    Check(X509_gmtime_adj(X509_getm_notAfter(cert), until_days * 86400) != nullptr, "notAfter");
    Check(X509_set_pubkey(cert, key) == 1, "X509_set_pubkey");
    Check(X509_NAME_add_entry_by_txt(X509_get_subject_name(cert), "CN", MBSTRING_ASC,
                                     reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1,
                                     0) == 1,
          "subject");
  }

  static void AddExtension(X509* issuer, X509* cert, int nid, const std::string& value) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
    Check(ext != nullptr, "extension");
    const int ok = X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
    Check(ok == 1, "X509_add_ext");
  }

  static void Sign(X509* cert, EVP_PKEY* key) {
    Check(X509_sign(cert, key, EVP_sha256()) > 0, "X509_sign");
  }

  static void WritePem(const std::string& path, X509* cert, EVP_PKEY* key) {
    FILE* f = std::fopen(path.c_str(), "we");
    Check(f != nullptr, "fopen");
    const bool ok = cert != nullptr
                        ? PEM_write_X509(f, cert) == 1
                        : PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
    std::fclose(f);
    Check(ok, "PEM write");
  }

  KeyPtr key_;
  CertPtr cert_;
};

}  // namespace netqos::testing

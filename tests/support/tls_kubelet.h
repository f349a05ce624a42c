// TlsKubelet: a stand-in for the kubelet's authenticated API (GET /pods over HTTPS) on
// 127.0.0.1 and a free port, with the certificate and key it is given (support/test_pki.h makes
// them). It answers 401 unless the request carries "Authorization: Bearer <token>", else the
// body `pods()` returns at that moment.
#pragma once

#include <httplib.h>

#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

namespace netqos::testing {

class TlsKubelet {
 public:
  TlsKubelet(const std::string& cert, const std::string& key, std::string token,
             std::function<std::string()> pods)
      : server_(cert.c_str(), key.c_str()) {
    if (!server_.is_valid()) throw std::runtime_error("SSLServer: bad certificate or key");
    server_.Get("/pods", [token = std::move(token), pods = std::move(pods)](
                             const httplib::Request& req, httplib::Response& res) {
      if (req.get_header_value("Authorization") != "Bearer " + token) {
        res.status = 401;
        return;
      }
      res.set_content(pods(), "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    if (port_ <= 0) throw std::runtime_error("SSLServer: cannot bind 127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~TlsKubelet() {
    server_.stop();
    thread_.join();
  }
  TlsKubelet(const TlsKubelet&) = delete;
  TlsKubelet& operator=(const TlsKubelet&) = delete;

  // https://<host>:<port>/pods
  std::string Url(const std::string& host) const {
    return "https://" + host + ":" + std::to_string(port_) + "/pods";
  }

 private:
  httplib::SSLServer server_;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace netqos::testing

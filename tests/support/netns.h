// Real network topologies for integration tests, built with iproute2: named network namespaces
// and veth pairs with chosen names, addresses and link states. Every object is removed by the
// destructor, also when a test fails; names carry the pid so parallel runs never collide.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace netqos::testing {

// Runs a shell command; throws with the command line on failure.
inline void Sh(const std::string& cmd) {
  if (std::system((cmd + " >/dev/null 2>&1").c_str()) != 0) {
    throw std::runtime_error("command failed: " + cmd);
  }
}

inline bool ShOk(const std::string& cmd) {
  return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0;
}

// A shell command's standard output ("" if it cannot be run).
inline std::string ShOutput(const std::string& cmd) {
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r"); p != nullptr) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
    ::pclose(p);
  }
  return out;
}

// A unique short prefix for this process's objects ("nq<pid%100000>"), fitting IFNAMSIZ (15).
inline std::string UniquePrefix() { return "nq" + std::to_string(::getpid() % 100000); }

class NetnsFixture {
 public:
  NetnsFixture() = default;
  ~NetnsFixture() {
    // Deleting a namespace deletes the veth ends inside it; host ends go with their peers.
    for (auto it = links_.rbegin(); it != links_.rend(); ++it) ShOk("ip link del " + *it);
    for (auto it = namespaces_.rbegin(); it != namespaces_.rend(); ++it)
      ShOk("ip netns del " + *it);
  }
  NetnsFixture(const NetnsFixture&) = delete;
  NetnsFixture& operator=(const NetnsFixture&) = delete;

  // Creates /var/run/netns/<name>.
  void AddNamespace(const std::string& name) {
    Sh("ip netns add " + name);
    namespaces_.push_back(name);
  }

  // Creates a veth pair host_end <-> peer_end; peer_end moves into `peer_ns` ("" = host).
  void AddVeth(const std::string& host_end, const std::string& peer_end,
               const std::string& peer_ns = "") {
    Sh("ip link add " + host_end + " type veth peer name " + peer_end);
    links_.push_back(host_end);
    if (!peer_ns.empty()) Sh("ip link set " + peer_end + " netns " + peer_ns);
  }

  static std::string In(const std::string& ns) { return ns.empty() ? "ip " : "ip -n " + ns + " "; }

  void AddAddress(const std::string& ns, const std::string& dev, const std::string& cidr) {
    Sh(In(ns) + "addr add " + cidr + " dev " + dev +
       (cidr.find(':') != std::string::npos ? " nodad" : ""));
  }
  void DelAddress(const std::string& ns, const std::string& dev, const std::string& cidr) {
    Sh(In(ns) + "addr del " + cidr + " dev " + dev);
  }
  void SetUp(const std::string& ns, const std::string& dev, bool up) {
    Sh(In(ns) + "link set " + dev + (up ? " up" : " down"));
  }
  void DeleteLink(const std::string& ns, const std::string& dev) {
    ShOk(In(ns) + "link del " + dev);
  }

 private:
  std::vector<std::string> namespaces_;
  std::vector<std::string> links_;
};

}  // namespace netqos::testing

// PodNetns: a pod as a CNI plugin wires it, for tests and benchmarks: a network namespace of its
// own, a veth pair whose pod end is "eth0" inside it (pod IP <net>2/24, default route via the
// host end) and whose host end (<net>1/24) stays in the host namespace. Traffic between the pod
// and anything beyond the host is routed by the host, so the host must forward: EnableForwarding
// sets net.ipv4.conf.<dev>.forwarding=1 on the devices named (the pod's host end and the NIC
// the traffic leaves or enters by), never the host-wide net.ipv4.ip_forward, and the destructor
// puts each back. AddRoute adds a route in another namespace (e.g. the remote's route to the pod
// subnet) and removes it again. Everything is removed on scope exit, also when a test fails;
// names carry the pid so parallel runs never collide.
//
//   PodNetns pod("a", "10.249.37.");                     // nq<pid>aP, nq<pid>aPh, 10.249.37.2
//   pod.EnableForwarding(pod.host_dev());
//   pod.EnableForwarding("nic0");
//   pod.AddRoute(remote_ns, pod.Subnet(), nic0_ip);
//   SpawnIn({...}, {.cgroup = container_cgroup, .netns = pod.ns()});   // a process of the pod
#pragma once

#include <net/if.h>

#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "support/netns.h"

namespace netqos::testing {

class PodNetns {
 public:
  // `tag`: 1-3 characters telling apart the pods of one process; `net`: the /24's first three
  // octets with the trailing dot ("10.249.37.").
  PodNetns(const std::string& tag, const std::string& net)
      : ns_(UniquePrefix() + tag + "P"),
        host_dev_(UniquePrefix() + tag + "Ph"),
        host_ip_(net + "1"),
        pod_ip_(net + "2"),
        subnet_(net + "0/24") {
    try {
      Sh("ip netns add " + ns_);
      ns_created_ = true;
      // The pod end is created inside the namespace: its name need not be free on the host.
      Sh("ip link add " + host_dev_ + " type veth peer name " + pod_dev_ + " netns " + ns_);
      link_created_ = true;
      Sh("ip addr add " + host_ip_ + "/24 dev " + host_dev_);
      Sh("ip link set " + host_dev_ + " up");
      Sh("ip -n " + ns_ + " link set lo up");
      Sh("ip -n " + ns_ + " addr add " + pod_ip_ + "/24 dev " + pod_dev_);
      Sh("ip -n " + ns_ + " link set " + pod_dev_ + " up");
      Sh("ip -n " + ns_ + " route add default via " + host_ip_);
      host_ifindex_ = static_cast<int>(::if_nametoindex(host_dev_.c_str()));
      if (host_ifindex_ <= 0) throw std::runtime_error("no ifindex for " + host_dev_);
    } catch (...) {
      Remove();
      throw;
    }
  }
  ~PodNetns() { Remove(); }
  PodNetns(const PodNetns&) = delete;
  PodNetns& operator=(const PodNetns&) = delete;

  const std::string& ns() const { return ns_; }              // the pod's namespace
  const std::string& host_dev() const { return host_dev_; }  // the host end of its veth
  const std::string& pod_dev() const { return pod_dev_; }    // "eth0", in ns()
  const std::string& host_ip() const { return host_ip_; }    // the pod's gateway
  const std::string& pod_ip() const { return pod_ip_; }      // what the kubelet lists (podIPs)
  const std::string& Subnet() const { return subnet_; }      // "<net>0/24"
  int host_ifindex() const { return host_ifindex_; }

  // net.ipv4.conf.<dev>.forwarding=1 in the host namespace; the old value comes back at the end
  // (if the device still exists then). A device is changed once, however often it is named.
  void EnableForwarding(const std::string& dev) {
    for (const auto& [d, old] : forwarding_) {
      if (d == dev) return;
    }
    const std::string path = ForwardingPath(dev);
    std::ifstream in(path);
    std::string old;
    if (!(in >> old)) throw std::runtime_error("cannot read " + path);
    forwarding_.emplace_back(dev, old);
    WriteSysctl(path, "1");
  }

  // `ip route add <cidr> via <via>` in namespace `ns` ("" = host); deleted at the end.
  void AddRoute(const std::string& ns, const std::string& cidr, const std::string& via) {
    Sh(NetnsFixture::In(ns) + "route add " + cidr + " via " + via);
    routes_.push_back({ns, cidr + " via " + via});
  }

  // Removes all of it now (the destructor does it otherwise); what is already gone is skipped.
  void Remove() {
    for (auto it = routes_.rbegin(); it != routes_.rend(); ++it) {
      ShOk(NetnsFixture::In(it->first) + "route del " + it->second);
    }
    routes_.clear();
    for (auto it = forwarding_.rbegin(); it != forwarding_.rend(); ++it) {
      try {
        WriteSysctl(ForwardingPath(it->first), it->second);
      } catch (...) {  // the device is gone, and its setting with it
      }
    }
    forwarding_.clear();
    // Deleting the host end deletes the pair at once, even while a process still holds the
    // namespace open.
    if (link_created_) ShOk("ip link del " + host_dev_);
    link_created_ = false;
    if (ns_created_) ShOk("ip netns del " + ns_);
    ns_created_ = false;
  }

 private:
  static std::string ForwardingPath(const std::string& dev) {
    return "/proc/sys/net/ipv4/conf/" + dev + "/forwarding";
  }
  static void WriteSysctl(const std::string& path, const std::string& value) {
    std::ofstream out(path);
    out << value << std::flush;
    if (!out) throw std::runtime_error("cannot write " + value + " to " + path);
  }

  std::string ns_, host_dev_, pod_dev_ = "eth0", host_ip_, pod_ip_, subnet_;
  int host_ifindex_ = 0;
  bool ns_created_ = false, link_created_ = false;
  std::vector<std::pair<std::string, std::string>> forwarding_;  // device, value before
  std::vector<std::pair<std::string, std::string>> routes_;      // namespace, "<cidr> via <ip>"
};

}  // namespace netqos::testing

// Pod lists shaped like a real kubelet's GET /pods: every pod with its whole spec and status
// (containers with env, probes, resources and mounts, volumes, tolerations, conditions, container
// states), managedFields, labels, owner references and a dozen annotations, a kubectl
// last-applied-configuration among them. For the pod list parser's tests and its footprint bench:
// what netqos reads is a small part of each pod.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

namespace netqos::testing {

struct KubeletPodListShape {
  int pods = 100;
  int containers = 2;         // regular containers per pod; one init container besides
  int env_vars = 12;          // per container
  int extra_annotations = 8;  // besides the usual ones, keys no reader of netqos knows
  uint64_t seed = 1;
};

namespace kubelet_pod_json {

using nlohmann::json;

class Words {
 public:
  explicit Words(uint64_t seed) : rng_(seed) {}
  std::string Hex(int n) {
    static const char* kDigits = "0123456789abcdef";
    std::string s;
    for (int i = 0; i < n; ++i) s += kDigits[rng_() % 16];
    return s;
  }
  std::string Uid() {
    return Hex(8) + "-" + Hex(4) + "-4" + Hex(3) + "-8" + Hex(3) + "-" + Hex(12);
  }
  uint64_t Next(uint64_t below) { return rng_() % below; }

 private:
  std::mt19937_64 rng_;
};

inline json FieldsV1(int containers) {
  json f = json::object();
  f["f:metadata"] = {{"f:annotations", {{".", json::object()}, {"f:prometheus.io/scrape", {}}}},
                     {"f:labels", {{".", json::object()}, {"f:app", {}}, {"f:tier", {}}}}};
  json spec = json::object();
  for (int c = 0; c < containers; ++c) {
    spec["k:{\"name\":\"c" + std::to_string(c) + "\"}"] = {
        {".", json::object()},
        {"f:image", json::object()},
        {"f:imagePullPolicy", json::object()},
        {"f:name", json::object()},
        {"f:resources", {{".", json::object()}, {"f:limits", json::object()}}},
        {"f:terminationMessagePath", json::object()}};
  }
  f["f:spec"] = {{"f:containers", spec}, {"f:dnsPolicy", json::object()}};
  return f;
}

inline json Container(Words& w, const std::string& name, int env_vars) {
  json env = json::array();
  for (int e = 0; e < env_vars; ++e) {
    env.push_back({{"name", "SETTING_" + std::to_string(e)}, {"value", "value-" + w.Hex(12)}});
  }
  env.push_back(
      {{"name", "POD_IP"},
       {"valueFrom", {{"fieldRef", {{"apiVersion", "v1"}, {"fieldPath", "status.podIP"}}}}}});
  json probe = {{"httpGet", {{"path", "/healthz"}, {"port", 8080}, {"scheme", "HTTP"}}},
                {"initialDelaySeconds", 10},
                {"periodSeconds", 10},
                {"timeoutSeconds", 1},
                {"successThreshold", 1},
                {"failureThreshold", 3}};
  return {
      {"name", name},
      {"image", "registry.example.internal/team/" + name + ":v1.2." + std::to_string(w.Next(90))},
      {"command", {"/usr/local/bin/server"}},
      {"args", {"--port=8080", "--log-level=info", "--config=/etc/app/config.yaml"}},
      {"ports", {{{"name", "http"}, {"containerPort", 8080}, {"protocol", "TCP"}}}},
      {"env", env},
      {"resources",
       {{"limits", {{"cpu", "500m"}, {"memory", "512Mi"}}},
        {"requests", {{"cpu", "250m"}, {"memory", "256Mi"}}}}},
      {"volumeMounts",
       {{{"name", "config"}, {"mountPath", "/etc/app"}, {"readOnly", true}},
        {{"name", "kube-api-access-" + w.Hex(5)},
         {"mountPath", "/var/run/secrets/kubernetes.io/serviceaccount"},
         {"readOnly", true}}}},
      {"livenessProbe", probe},
      {"readinessProbe", probe},
      {"terminationMessagePath", "/dev/termination-log"},
      {"terminationMessagePolicy", "File"},
      {"imagePullPolicy", "IfNotPresent"},
      {"securityContext", {{"runAsNonRoot", true}, {"allowPrivilegeEscalation", false}}}};
}

inline json ContainerStatus(Words& w, const std::string& name, bool init) {
  const std::string id = "containerd://" + w.Hex(64);
  json state = init ? json{{"terminated",
                            {{"exitCode", 0},
                             {"reason", "Completed"},
                             {"startedAt", "2026-12-07T10:00:01Z"},
                             {"finishedAt", "2026-12-07T10:00:03Z"},
                             {"containerID", id}}}}
                    : json{{"running", {{"startedAt", "2026-12-07T10:00:05Z"}}}};
  return {{"name", name},
          {"state", state},
          {"lastState", json::object()},
          {"ready", !init},
          {"restartCount", 0},
          {"image", "registry.example.internal/team/" + name + ":v1.2.3"},
          {"imageID", "registry.example.internal/team/" + name + "@sha256:" + w.Hex(64)},
          {"containerID", id},
          {"started", !init}};
}

inline json Pod(Words& w, int index, const KubeletPodListShape& shape) {
  static const char* kNamespaces[] = {"payments-prod", "checkout", "search-indexing", "web",
                                      "ml-training-batch"};
  static const char* kLevels[] = {"shared_cores", "dedicated_cores", "reclaimed_cores"};
  const std::string ns = kNamespaces[index % 5];
  const std::string app = "app-" + std::to_string(index % 37);
  const std::string name = app + "-" + w.Hex(10) + "-" + w.Hex(5);
  json annotations = {{"kubernetes.io/config.seen", "2026-12-07T10:11:12.123456789Z"},
                      {"kubernetes.io/config.source", "api"},
                      {"kubectl.kubernetes.io/restartedAt", "2026-12-01T09:00:00Z"},
                      {"prometheus.io/scrape", "true"},
                      {"prometheus.io/port", "9090"},
                      {"cni.projectcalico.org/podIP", "10.1." + std::to_string(index / 250) + "." +
                                                          std::to_string(index % 250) + "/32"}};
  // What netqos reads, on some pods.
  if (index % 2 == 0) annotations["katalyst.kubewharf.io/qos_level"] = kLevels[index % 3];
  if (index % 3 == 0) annotations["kubernetes.io/egress-bandwidth"] = "100M";
  if (index % 5 == 0) annotations["kubernetes.io/ingress-bandwidth"] = "1G";
  if (index % 7 == 0) annotations["netqos.io/burst"] = "64Ki";
  if (index % 11 == 0) annotations["netqos.io/dscp"] = "AF41";
  if (index % 13 == 0) annotations["katalyst.kubewharf.io/net_class_id"] = "7";
  for (int a = 0; a < shape.extra_annotations; ++a) {
    annotations["example.com/annotation-" + std::to_string(a)] = "value-" + w.Hex(16);
  }
  json containers = json::array();
  json statuses = json::array();
  for (int c = 0; c < shape.containers; ++c) {
    const std::string cname = "c" + std::to_string(c);
    containers.push_back(Container(w, cname, shape.env_vars));
    statuses.push_back(ContainerStatus(w, cname, false));
  }
  json init = Container(w, "init", 2);
  annotations["kubectl.kubernetes.io/last-applied-configuration"] = json{
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", name}, {"namespace", ns}}},
      {"spec", {{"containers", containers}}}}.dump();
  const std::string ip = "10.1." + std::to_string(index / 250) + "." + std::to_string(index % 250);
  json conditions = json::array();
  for (const char* type :
       {"PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"}) {
    conditions.push_back({{"type", type},
                          {"status", "True"},
                          {"lastProbeTime", nullptr},
                          {"lastTransitionTime", "2026-12-07T10:00:06Z"}});
  }
  return {
      {"metadata",
       {{"name", name},
        {"generateName", app + "-" + w.Hex(10) + "-"},
        {"namespace", ns},
        {"uid", w.Uid()},
        {"resourceVersion", std::to_string(100000 + index)},
        {"creationTimestamp", "2026-12-07T10:00:00Z"},
        {"labels", {{"app", app}, {"tier", "backend"}, {"pod-template-hash", w.Hex(10)}}},
        {"annotations", annotations},
        {"ownerReferences",
         {{{"apiVersion", "apps/v1"},
           {"kind", "ReplicaSet"},
           {"name", app + "-" + w.Hex(10)},
           {"uid", w.Uid()},
           {"controller", true},
           {"blockOwnerDeletion", true}}}},
        {"managedFields",
         {{{"manager", "kube-controller-manager"},
           {"operation", "Update"},
           {"apiVersion", "v1"},
           {"time", "2026-12-07T10:00:00Z"},
           {"fieldsType", "FieldsV1"},
           {"fieldsV1", FieldsV1(shape.containers)}},
          {{"manager", "kubelet"},
           {"operation", "Update"},
           {"apiVersion", "v1"},
           {"time", "2026-12-07T10:00:06Z"},
           {"fieldsType", "FieldsV1"},
           {"subresource", "status"},
           {"fieldsV1", {{"f:status", {{"f:conditions", json::object()}, {"f:podIP", {}}}}}}}}}}},
      {"spec",
       {{"volumes",
         {{{"name", "config"}, {"configMap", {{"name", app + "-config"}, {"defaultMode", 420}}}},
          {{"name", "kube-api-access-" + w.Hex(5)},
           {"projected",
            {{"sources",
              {{{"serviceAccountToken", {{"expirationSeconds", 3607}, {"path", "token"}}}},
               {{"configMap",
                 {{"name", "kube-root-ca.crt"},
                  {"items", {{{"key", "ca.crt"}, {"path", "ca.crt"}}}}}}}}},
             {"defaultMode", 420}}}}}},
        {"initContainers", {init}},
        {"containers", containers},
        {"restartPolicy", "Always"},
        {"terminationGracePeriodSeconds", 30},
        {"dnsPolicy", "ClusterFirst"},
        {"serviceAccountName", "default"},
        {"nodeName", "node-17"},
        {"hostNetwork", index % 50 == 0},
        {"securityContext", json::object()},
        {"schedulerName", "default-scheduler"},
        {"tolerations",
         {{{"key", "node.kubernetes.io/not-ready"},
           {"operator", "Exists"},
           {"effect", "NoExecute"},
           {"tolerationSeconds", 300}},
          {{"key", "node.kubernetes.io/unreachable"},
           {"operator", "Exists"},
           {"effect", "NoExecute"},
           {"tolerationSeconds", 300}}}},
        {"priority", 0},
        {"enableServiceLinks", true},
        {"preemptionPolicy", "PreemptLowerPriority"}}},
      {"status",
       {{"phase", "Running"},
        {"conditions", conditions},
        {"hostIP", "192.168.1.17"},
        {"hostIPs", {{{"ip", "192.168.1.17"}}}},
        {"podIP", ip},
        {"podIPs", {{{"ip", ip}}, {{"ip", "fd00::" + std::to_string(index)}}}},
        {"startTime", "2026-12-07T10:00:00Z"},
        {"initContainerStatuses", {ContainerStatus(w, "init", true)}},
        {"containerStatuses", statuses},
        {"qosClass", index % 4 == 0 ? "Guaranteed" : "Burstable"}}}};
}

}  // namespace kubelet_pod_json

// The PodList document, as the kubelet writes it (compact). Each pod is built and written in turn,
// so making a large list never holds more than one pod's tree.
inline std::string KubeletPodListJson(const KubeletPodListShape& shape) {
  kubelet_pod_json::Words words(shape.seed);
  std::string out = R"({"kind":"PodList","apiVersion":"v1","metadata":{},"items":[)";
  for (int i = 0; i < shape.pods; ++i) {
    if (i != 0) out += ',';
    out += kubelet_pod_json::Pod(words, i, shape).dump();
  }
  out += "]}";
  return out;
}

}  // namespace netqos::testing

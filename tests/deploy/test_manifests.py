#!/usr/bin/env python3
"""Checks the Kubernetes manifests in deploy/ against each other and against the netqosd binary.

  test_manifests.py --netqosd PATH [--deploy-dir DIR] [--kubectl PATH] [--self-test]
  test_manifests.py --fetch-renderer

Renders the kustomize base (deploy/base) and every overlay of deploy/overlays with
`kubectl kustomize` (Debian bookworm's kubectl 1.20 from kubernetes-client, fetched into
~/.cache/netqos; no renderer: exit 77, or a failure under CI=true), and checks how they compose:
every base file is a resource, the image is the base's images: entry, and each overlay's netqosd
args are the base's followed by exactly the ones it appends itself. Then, in the rendered base
with deploy/uninstall/*.yaml, and in each rendered overlay, every YAML document: field names
against a small schema of the types used (a typo such as "mountPropogation" is silently dropped by
a lenient API server); the DaemonSet's node-agent settings; host mounts and where the flags point;
every flag against `netqosd --help`, and the whole command line (with $(VAR) expanded from the
downward API, and the --config file from its ConfigMap) against `netqosd ... --print-config`,
which validates values; the config file: a read-only ConfigMap mount, every key (the commented-out
examples too) a netqosd setting with a valid value, none the args override; the probes against
the metrics listener; images, ServiceAccount, RBAC and ConfigMap references.
And the security rules of docs/security.md: the metrics listener on loopback only, no hostPID,
every host path netqosd does not write mounted readOnly; no nodes/proxy (nor any nodes/*
permission) and no service account token in the default manifests, which read pods from the
container runtime's CRI socket; Linux nodes that opted in (nodeSelector); not privileged, but the
capabilities netqosd needs with all others dropped (privileged only in deploy/overlays/privileged,
with a Bidirectional bpffs mount). The opt-in overlay deploy/overlays/kubelet-pods (kubelet pod
source) is checked as applied: nodes/proxy granted to netqosd's ServiceAccount, the token
mounted, the kubelet's certificate verified against a CA file. The opt-in overlay
deploy/overlays/metrics-proxy (an authenticating proxy for scrapes from elsewhere) is checked as
applied: netqosd still binds loopback, the proxy forwards /metrics alone to that address, serves
TLS with a certificate of its own, runs unprivileged, and is the only container with a token.
The tenant policy: --tenant-policy-file on a read-only ConfigMap directory mount (no subPath),
and the ConfigMap's policy accepted by `netqosd --check-tenant-policy`.

--self-test instead breaks the manifests in memory, one mutation at a time, and fails unless each
breakage is reported: the checks themselves are tested.
"""

import argparse
import copy
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:
    # scripts/install-deps.sh installs python3-yaml for Debian's python3; another python3 may
    # come first in PATH (pyenv, a virtualenv).
    if os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3") and \
            os.access("/usr/bin/python3", os.X_OK):
        os.execv("/usr/bin/python3", ["/usr/bin/python3", *sys.argv])
    print("FAIL: PyYAML is missing for " + sys.executable +
          " (Debian: apt-get install python3-yaml; scripts/install-deps.sh installs it)")
    sys.exit(1)

# ---- a small schema: the field names of the API types the manifests use ----------------------

META = {"name", "generateName", "namespace", "labels", "annotations", "finalizers",
        "ownerReferences"}
VOLUME_SOURCES = {
    "awsElasticBlockStore", "azureDisk", "azureFile", "cephfs", "cinder", "configMap", "csi",
    "downwardAPI", "emptyDir", "ephemeral", "fc", "flexVolume", "flocker", "gcePersistentDisk",
    "gitRepo", "glusterfs", "hostPath", "image", "iscsi", "nfs", "persistentVolumeClaim",
    "photonPersistentDisk", "portworxVolume", "projected", "quobyte", "rbd", "scaleIO", "secret",
    "storageos", "vsphereVolume"}
FIELDS = {
    "PodSpec": {
        "activeDeadlineSeconds", "affinity", "automountServiceAccountToken", "containers",
        "dnsConfig", "dnsPolicy", "enableServiceLinks", "ephemeralContainers", "hostAliases",
        "hostIPC", "hostNetwork", "hostPID", "hostUsers", "hostname", "hostnameOverride",
        "imagePullSecrets", "initContainers", "nodeName", "nodeSelector", "os", "overhead",
        "preemptionPolicy", "priority", "priorityClassName", "readinessGates", "resourceClaims",
        "resources", "restartPolicy", "runtimeClassName", "schedulerName", "schedulingGates",
        "securityContext", "serviceAccount", "serviceAccountName", "setHostnameAsFQDN",
        "shareProcessNamespace", "subdomain", "terminationGracePeriodSeconds", "tolerations",
        "topologySpreadConstraints", "volumes"},
    "Container": {
        "args", "command", "env", "envFrom", "image", "imagePullPolicy", "lifecycle",
        "livenessProbe", "name", "ports", "readinessProbe", "resizePolicy", "resources",
        "restartPolicy", "restartPolicyRules", "securityContext", "startupProbe", "stdin",
        "stdinOnce", "terminationMessagePath", "terminationMessagePolicy", "tty", "volumeDevices",
        "volumeMounts", "workingDir"},
    "VolumeMount": {"mountPath", "mountPropagation", "name", "readOnly", "recursiveReadOnly",
                    "subPath", "subPathExpr"},
    "Volume": {"name"} | VOLUME_SOURCES,
    "HostPath": {"path", "type"},
    "Probe": {"exec", "failureThreshold", "grpc", "httpGet", "initialDelaySeconds",
              "periodSeconds", "successThreshold", "tcpSocket", "terminationGracePeriodSeconds",
              "timeoutSeconds"},
    "HTTPGetAction": {"host", "httpHeaders", "path", "port", "scheme"},
    "SecurityContext": {"allowPrivilegeEscalation", "appArmorProfile", "capabilities",
                        "privileged", "procMount", "readOnlyRootFilesystem", "runAsGroup",
                        "runAsNonRoot", "runAsUser", "seLinuxOptions", "seccompProfile",
                        "windowsOptions"},
    "Capabilities": {"add", "drop"},
    "EnvVar": {"name", "value", "valueFrom"},
    "EnvVarSource": {"configMapKeyRef", "fieldRef", "fileKeyRef", "resourceFieldRef",
                     "secretKeyRef"},
    "KeySelector": {"key", "name", "optional"},
    "FieldSelector": {"apiVersion", "fieldPath"},
    "ContainerPort": {"containerPort", "hostIP", "hostPort", "name", "protocol"},
    "Resources": {"claims", "limits", "requests"},
    "Toleration": {"effect", "key", "operator", "tolerationSeconds", "value"},
    "DaemonSetSpec": {"minReadySeconds", "revisionHistoryLimit", "selector", "template",
                      "updateStrategy"},
    "DaemonSetUpdateStrategy": {"rollingUpdate", "type"},
    "RollingUpdateDaemonSet": {"maxSurge", "maxUnavailable"},
    "JobSpec": {"activeDeadlineSeconds", "backoffLimit", "backoffLimitPerIndex",
                "completionMode", "completions", "managedBy", "manualSelector",
                "maxFailedIndexes", "parallelism", "podFailurePolicy", "podReplacementPolicy",
                "selector", "successPolicy", "suspend", "template", "ttlSecondsAfterFinished"},
    "PodTemplateSpec": {"metadata", "spec"},
    "ObjectMeta": META,
}
ENUMS = {
    "mountPropagation": {"None", "HostToContainer", "Bidirectional"},
    "hostPath.type": {"", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket",
                      "CharDevice", "BlockDevice"},
    "dnsPolicy": {"ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"},
    "imagePullPolicy": {"Always", "IfNotPresent", "Never"},
    "restartPolicy": {"Always", "OnFailure", "Never"},
    "toleration.operator": {"Exists", "Equal"},
    "port.protocol": {"TCP", "UDP", "SCTP"},
}
ENV_FIELD_PATHS = {"metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
                   "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP",
                   "status.podIPs"}
# What the daemon needs from the host: path -> (why, required propagation or None).
REQUIRED_DAEMON_MOUNTS = {
    # HostToContainer: the host's bpffs; Bidirectional (privileged only): one netqosd mounts.
    "/sys/fs/bpf": ("bpffs: pinned maps and links", "HostToContainer or, privileged, Bidirectional"),
    "/sys/fs/cgroup": ("cgroup v2 tree: container cgroup ids, the egress attach point", None),
    "/var/lib/kubelet/plugins_registry": ("the kubelet's plugin watcher directory", None),
    "/var/lib/katalyst/qrm_advisor": ("checkpoint and installed-links record", None),
    "/var/run/netns": ("named network namespaces (multi-netns NICs)", "HostToContainer"),
}
# The host paths netqosd (and netqosd --uninstall) write, and what it writes there. Every other
# host path must be mounted readOnly: true (docs/security.md). /sys/fs/cgroup is only read
# (inotify, inodes; the program is attached through a directory fd); /var/run/netns only opened
# for setns() and listed.
WRITTEN_HOST_PATHS = {
    "/sys/fs/bpf": "pins the programs, links and maps, and may mount a bpffs",
    "/var/lib/kubelet/plugins_registry": "creates its plugin socket",
    "/var/lib/katalyst/qrm_advisor": "writes the checkpoint and the installed-links record",
}
# Where the metrics listener may listen: loopback. It is plain HTTP without authentication, and
# under hostNetwork the node's addresses are reachable from every pod (docs/security.md).
LOOPBACK_HOSTS = {"127.0.0.1", "::1", "[::1]", "localhost"}
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
# What --cri-socket=auto tries, in order (userspace/pods/cri/cri_endpoint.h).
CRI_AUTO_SOCKETS = ["/run/containerd/containerd.sock", "/run/crio/crio.sock"]
# What netqosd needs without privileged: true (app/capability_check.cc names the same; measured by
# tests/deploy/capabilities_test.sh). A privileged container has them all.
REQUIRED_CAPS = {"BPF", "NET_ADMIN"}
# The node selection: Linux nodes that opted in (deploy/README.md, "Choosing the nodes").
NODE_SELECTOR = {"kubernetes.io/os": "linux", "netqos.io/enabled": "true"}
EXAMPLE_NODE_IP = "192.0.2.10"  # TEST-NET-1, for expanding status.hostIP


class Checker:
    def __init__(self, docs, netqosd, help_flags, version):
        self.docs = docs              # [(file, doc)]
        self.netqosd = netqosd
        self.help_flags = help_flags  # {"--flag", ...}
        self.version = version
        self.failures = []
        self.checks = 0

    def fail(self, where, message):
        self.failures.append(f"{where}: {message}")

    def expect(self, cond, where, message):
        self.checks += 1
        if not cond:
            self.fail(where, message)
        return cond

    # ---- helpers -------------------------------------------------------------------------------

    def of_kind(self, kind):
        return [(f, d) for f, d in self.docs if d.get("kind") == kind]

    def find(self, kind, name, namespace=None):
        for _, d in self.of_kind(kind):
            m = d.get("metadata", {})
            if m.get("name") == name and (namespace is None or m.get("namespace") == namespace):
                return d
        return None

    @staticmethod
    def label(f, d):
        m = d.get("metadata") or {}
        return f"{os.path.basename(f)} {d.get('kind')}/{m.get('name') or m.get('generateName')}"

    def workloads(self):
        """(where, doc, pod spec) of the DaemonSet and Job documents."""
        out = []
        for kind in ("DaemonSet", "Job"):
            for f, d in self.of_kind(kind):
                spec = ((d.get("spec") or {}).get("template") or {}).get("spec") or {}
                out.append((self.label(f, d), d, spec))
        return out

    # ---- schema ---------------------------------------------------------------------------------

    def keys(self, obj, typ, where):
        if not isinstance(obj, dict):
            self.fail(where, f"expected a mapping ({typ}), got {type(obj).__name__}")
            return {}
        unknown = sorted(set(obj) - FIELDS[typ])
        self.expect(not unknown, where, f"unknown {typ} field(s) {unknown} (typo?)")
        return obj

    def enum(self, value, name, where):
        if value is not None:
            self.expect(value in ENUMS[name], where,
                        f"{name} {value!r} is not one of {sorted(ENUMS[name])}")

    def check_probe(self, probe, where):
        self.keys(probe, "Probe", where)
        if isinstance(probe, dict) and "httpGet" in probe:
            self.keys(probe["httpGet"], "HTTPGetAction", where + ".httpGet")

    def check_container_schema(self, c, where):
        self.keys(c, "Container", where)
        self.enum(c.get("imagePullPolicy"), "imagePullPolicy", where)
        for i, vm in enumerate(c.get("volumeMounts") or []):
            w = f"{where}.volumeMounts[{i}]"
            self.keys(vm, "VolumeMount", w)
            self.enum(vm.get("mountPropagation"), "mountPropagation", w)
        for i, e in enumerate(c.get("env") or []):
            w = f"{where}.env[{i}]"
            self.keys(e, "EnvVar", w)
            vf = e.get("valueFrom")
            if vf is not None:
                self.keys(vf, "EnvVarSource", w + ".valueFrom")
                for sel in ("configMapKeyRef", "secretKeyRef"):
                    if sel in vf:
                        self.keys(vf[sel], "KeySelector", f"{w}.valueFrom.{sel}")
                if "fieldRef" in vf:
                    self.keys(vf["fieldRef"], "FieldSelector", w + ".valueFrom.fieldRef")
                    path = vf["fieldRef"].get("fieldPath", "")
                    self.expect(path in ENV_FIELD_PATHS or
                                re.fullmatch(r"metadata\.(labels|annotations)\['[^']+'\]", path),
                                w, f"fieldPath {path!r} is not available to env")
        for i, p in enumerate(c.get("ports") or []):
            self.keys(p, "ContainerPort", f"{where}.ports[{i}]")
            self.enum(p.get("protocol"), "port.protocol", f"{where}.ports[{i}]")
        for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
            if probe in c:
                self.check_probe(c[probe], f"{where}.{probe}")
        if "securityContext" in c:
            self.keys(c["securityContext"], "SecurityContext", where + ".securityContext")
            caps = c["securityContext"].get("capabilities")
            if caps is not None:
                self.keys(caps, "Capabilities", where + ".securityContext.capabilities")
        if "resources" in c:
            self.keys(c["resources"], "Resources", where + ".resources")

    def check_pod_schema(self, spec, where):
        self.keys(spec, "PodSpec", where)
        self.enum(spec.get("dnsPolicy"), "dnsPolicy", where)
        self.enum(spec.get("restartPolicy"), "restartPolicy", where)
        for i, t in enumerate(spec.get("tolerations") or []):
            self.keys(t, "Toleration", f"{where}.tolerations[{i}]")
            self.enum(t.get("operator"), "toleration.operator", f"{where}.tolerations[{i}]")
        for i, v in enumerate(spec.get("volumes") or []):
            w = f"{where}.volumes[{i}]"
            self.keys(v, "Volume", w)
            sources = set(v) & VOLUME_SOURCES
            self.expect(len(sources) == 1, w, f"a volume needs exactly one source, has {sources}")
            if "hostPath" in v:
                self.keys(v["hostPath"], "HostPath", w + ".hostPath")
                self.enum(v["hostPath"].get("type", ""), "hostPath.type", w)
        for kind in ("initContainers", "containers"):
            for i, c in enumerate(spec.get(kind) or []):
                self.check_container_schema(c, f"{where}.{kind}[{i}]")

    def check_documents(self):
        seen = {}
        for f, d in self.docs:
            where = self.label(f, d)
            if not self.expect(isinstance(d, dict) and d.get("apiVersion") and d.get("kind"),
                               os.path.basename(f), "document without apiVersion and kind"):
                continue
            meta = d.get("metadata")
            if not self.expect(isinstance(meta, dict) and (meta.get("name") or
                                                           meta.get("generateName")),
                               where, "metadata.name (or generateName) missing"):
                continue
            self.keys(meta, "ObjectMeta", where + ".metadata")
            key = (d["kind"], meta.get("namespace"), meta.get("name") or meta.get("generateName"))
            self.expect(key not in seen, where, f"defined twice (also in {seen.get(key)})")
            seen[key] = os.path.basename(f)
        for where, d, spec in self.workloads():
            self.keys(d.get("spec") or {}, "DaemonSetSpec" if d["kind"] == "DaemonSet"
                      else "JobSpec", where + ".spec")
            self.keys((d.get("spec") or {}).get("template") or {}, "PodTemplateSpec",
                      where + ".spec.template")
            self.keys(((d.get("spec") or {}).get("template") or {}).get("metadata") or {},
                      "ObjectMeta", where + ".spec.template.metadata")
            self.check_pod_schema(spec, where + ".spec.template.spec")

    # ---- namespace, identity, RBAC --------------------------------------------------------------

    def check_namespaces(self):
        namespaces = {d["metadata"]["name"]: d for _, d in self.of_kind("Namespace")}
        self.expect(namespaces, "manifests", "no Namespace object")
        cluster_kinds = {"Namespace", "ClusterRole", "ClusterRoleBinding"}
        for f, d in self.docs:
            if d.get("kind") in cluster_kinds:
                continue
            ns = (d.get("metadata") or {}).get("namespace")
            self.expect(ns in namespaces, self.label(f, d),
                        f"namespace {ns!r} is not one of the Namespaces defined "
                        f"{sorted(namespaces)}")
        for name, d in namespaces.items():
            labels = d["metadata"].get("labels") or {}
            self.expect(labels.get("pod-security.kubernetes.io/enforce") == "privileged",
                        f"Namespace/{name}",
                        "needs label pod-security.kubernetes.io/enforce=privileged (the pods use "
                        "hostNetwork, hostPath and privileged containers)")

    def check_rbac(self):
        for where, d, spec in self.workloads():
            if d["kind"] != "DaemonSet":
                continue
            ns = d["metadata"].get("namespace")
            sa = spec.get("serviceAccountName")
            if not self.expect(sa, where, "no serviceAccountName"):
                continue
            self.expect(self.find("ServiceAccount", sa, ns) is not None, where,
                        f"ServiceAccount {ns}/{sa} is not defined in the manifests")
            if self.pod_source(spec) == "kubelet":
                self.expect(spec.get("automountServiceAccountToken", True) is not False, where,
                            "automountServiceAccountToken is false: no token for the kubelet API")
                self.expect(self.granted_nodes(sa, ns) & {"nodes/proxy"}, where,
                            f"ServiceAccount {ns}/{sa} is not granted get on nodes/proxy (the "
                            "kubelet's authorization for GET /pods)")
            else:
                self.expect(spec.get("automountServiceAccountToken") is False, where,
                            "automountServiceAccountToken must be false: the CRI pod source "
                            "needs no token, and an unused token is still a credential")
        if self.pod_source_of_daemonset() != "kubelet":
            # Whoever the subject: nodes/proxy opens exec in every pod (an exec is a GET).
            for _, role in self.of_kind("ClusterRole"):
                for rule in role.get("rules") or []:
                    nodes = {r for r in rule.get("resources") or []
                             if r == "*" or r.startswith("nodes")}
                    self.expect(not nodes, f"ClusterRole/{role['metadata']['name']}",
                                f"grants {sorted(nodes)}: the default manifests must not grant "
                                "nodes/proxy or nodes/pods (the kubelet pod source is the "
                                "opt-in overlay deploy/overlays/kubelet-pods)")

    def granted_nodes(self, sa, ns):
        """The nodes/* resources a ClusterRoleBinding grants `get` on to ServiceAccount ns/sa."""
        return {r for g, r, v in self.granted(sa, ns)
                if g == "" and v in ("get", "*") and r.startswith("nodes")}

    def granted(self, sa, ns):
        """(apiGroup, resource, verb) that ClusterRoleBindings grant ServiceAccount ns/sa."""
        out = set()
        for _, b in self.of_kind("ClusterRoleBinding"):
            if not any(s.get("kind") == "ServiceAccount" and s.get("name") == sa and
                       s.get("namespace") == ns for s in b.get("subjects") or []):
                continue
            ref = b.get("roleRef") or {}
            role = self.find("ClusterRole", ref.get("name")) if ref.get("kind") == \
                "ClusterRole" else None
            self.expect(role is not None, f"ClusterRoleBinding/{b['metadata']['name']}",
                        f"roleRef {ref.get('kind')}/{ref.get('name')} is not defined")
            for rule in (role or {}).get("rules") or []:
                out |= {(g, r, v) for g in rule.get("apiGroups") or []
                        for r in rule.get("resources") or [] for v in rule.get("verbs") or []}
        return out

    @staticmethod
    def pod_source(spec):
        """--pod-source of the pod's first container ("cri", netqosd's default, when absent)."""
        for c in (spec.get("containers") or [])[:1]:
            for a in c.get("args") or []:
                if a.startswith("--pod-source="):
                    return a.partition("=")[2]
        return "cri"

    def pod_source_of_daemonset(self):
        for _, d in self.of_kind("DaemonSet"):
            return self.pod_source(((d.get("spec") or {}).get("template") or {}).get("spec") or {})
        return "cri"

    # ---- the workloads --------------------------------------------------------------------------

    def env_of(self, c, ns, where):
        """({VAR: value for the expansion, None if unknown}, {VAR: fieldPath}); checks the
        ConfigMap references."""
        env, sources = {}, {}
        for e in c.get("env") or []:
            name = e.get("name")
            if "value" in e:
                env[name] = self.expand(str(e["value"]), env)
                continue
            vf = e.get("valueFrom") or {}
            if "fieldRef" in vf:
                path = vf["fieldRef"].get("fieldPath")
                env[name] = {"status.hostIP": EXAMPLE_NODE_IP, "spec.nodeName": "node-1"}.get(
                    path, "x")
                sources[name] = path
            elif "configMapKeyRef" in vf:
                ref = vf["configMapKeyRef"]
                cm = self.find("ConfigMap", ref.get("name"), ns)
                ok = self.expect(cm is not None, where,
                                 f"env {name}: ConfigMap {ns}/{ref.get('name')} is not defined")
                data = (cm or {}).get("data") or {}
                ok = ok and self.expect(ref.get("key") in data, where,
                                        f"env {name}: ConfigMap {ref.get('name')} has no key "
                                        f"{ref.get('key')!r}")
                self.expect(not ref.get("optional"), where,
                            f"env {name}: optional ConfigMap key: a missing key would leave "
                            f"$({name}) unexpanded in the flags")
                env[name] = str(data.get(ref.get("key"), "")) if ok else None
            else:
                env[name] = "x"
        return env, sources

    @staticmethod
    def expand(text, env):
        """Kubernetes $(VAR) expansion: $$ escapes, undefined references stay as they are."""
        def sub(m):
            if m.group(0) == "$$":
                return "$"
            v = env.get(m.group(1))
            return m.group(0) if v is None else v
        return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)", sub, text)

    def flags(self, args):
        out = {}
        for a in args:
            name, _, value = a.partition("=")
            out[name] = value
        return out

    def check_flags(self, c, env, where, spec=None, ns=None):
        """({flag: value}, {flag: value before $(VAR) expansion}) of what the container sets: its
        args, and the settings of its --config file (read from the ConfigMap mounted there; args
        win, as in netqosd)."""
        args = [str(a) for a in c.get("args") or []]
        self.expect(not c.get("command"), where,
                    "sets command: the image's ENTRYPOINT is netqosd; give flags in args")
        names = []
        for a in args:
            if not self.expect(a.startswith("--"), where, f"argument {a!r} is not a --flag"):
                continue
            name = a.partition("=")[0]
            names.append(name)
            self.expect(name in self.help_flags, where,
                        f"flag {name} is not in `netqosd --help`")
            for var in re.findall(r"(?<!\$)\$\(([^)]*)\)", a):
                self.expect(var in env, where, f"{a}: $({var}) is not defined in env")
        dups = sorted({n for n in names if names.count(n) > 1})
        self.expect(not dups, where, f"flags given twice: {dups}")
        expanded = [self.expand(a, {k: v for k, v in env.items() if v is not None}) for a in args]
        config = self.flags(expanded).get("--config")
        config_text = None
        if config is not None and spec is not None:
            config_text = self.config_file(spec, c, ns, config, set(names), where)
        from_file = {}
        if self.netqosd:
            with tempfile.NamedTemporaryFile("w", suffix=".conf") as f:
                f.write(config_text or "")
                f.flush()
                # --print-config parses and validates every value, then exits without touching the
                # system: the command line the pod will run is one netqosd accepts. Flags unknown to
                # this binary are reported above and left out here, so the others are still
                # checked. The config file is read from a copy of the ConfigMap's key.
                known = [f"--config={f.name}" if a.partition("=")[0] == "--config" and
                         config_text is not None else a
                         for a in expanded if a.partition("=")[0] in self.help_flags]
                r = subprocess.run([self.netqosd, *known, "--print-config"], capture_output=True,
                                   text=True, timeout=30)
            self.expect(r.returncode == 0, where,
                        f"netqosd rejects the expanded command line: "
                        f"{(r.stderr or r.stdout).strip()} (arguments: {' '.join(known)})")
            if r.returncode == 0 and config_text is not None:
                printed = parse_config(r.stdout)
                from_file = {f"--{k}": printed[k] for k in config_keys(config_text)
                             if k in printed}
        return {**from_file, **self.flags(expanded)}, {**from_file, **self.flags(args)}

    def configmap_file(self, mounts, path, ns, where, flag, what, subpath_harm):
        """(ConfigMap name, key, text) of the file at `path`, which `flag` names: a key of a
        ConfigMap mounted read-only as a directory (a subPath mount does not follow the
        ConfigMap: `subpath_harm` says what that would break). None, reported, otherwise."""
        m = self.mount_for(mounts, path)
        if not self.expect(m is not None and "configMap" in m[1][1], where,
                           f"{flag} {path} is not on a mounted ConfigMap"):
            return None
        mount_path, (vm, volume) = m
        self.expect(vm.get("readOnly") is True, where,
                    f"the {what} mount {mount_path} must be readOnly: true")
        self.expect("subPath" not in vm and "subPathExpr" not in vm, where,
                    f"the {what} mount {mount_path} uses a subPath: {subpath_harm}")
        key = path[len(mount_path.rstrip("/")) + 1:]
        for item in volume["configMap"].get("items") or []:
            if item.get("path") == key:
                key = item.get("key")
        name = volume["configMap"].get("name")
        cm = self.find("ConfigMap", name, ns)
        if not self.expect(cm is not None, where, f"{what} ConfigMap {ns}/{name} is not defined"):
            return None
        text = (cm.get("data") or {}).get(key)
        if not self.expect(text is not None, where, f"{what} ConfigMap {name} has no key {key!r}"):
            return None
        return name, key, text

    def config_file(self, spec, c, ns, path, arg_names, where):
        """The text of the --config file: a key of a ConfigMap mounted read-only (a directory
        mount, so that a restart after an edit reads the new file). netqosd must take it as it
        is and with every commented-out example line enabled, and no key of it may be one the
        args set (the args win: an edit of that key would do nothing)."""
        volumes = {v.get("name"): v for v in spec.get("volumes") or []}
        mounts = {vm.get("mountPath"): (vm, volumes.get(vm.get("name")) or {})
                  for vm in c.get("volumeMounts") or []}
        found = self.configmap_file(mounts, path, ns, where, "--config", "config",
                                    "a restart after an edit of the ConfigMap would still read "
                                    "the old file")
        if found is None:
            return None
        name, key, text = found
        overridden = sorted(k for k in config_keys(text) if f"--{k}" in arg_names)
        self.expect(not overridden, where,
                    f"ConfigMap {name} key {key} sets {overridden}, which the args set too: the "
                    "args win, so editing them in the ConfigMap would do nothing")
        if self.netqosd:
            examples = re.sub(r"(?m)^#\s*([a-z0-9][a-z0-9-]*\s*=)", r"\1", text)
            for what, body in (("", text), (" with its commented-out examples enabled", examples)):
                with tempfile.NamedTemporaryFile("w", suffix=".conf") as f:
                    f.write(body)
                    f.flush()
                    r = subprocess.run([self.netqosd, f"--config={f.name}", "--print-config"],
                                       capture_output=True, text=True, timeout=30)
                self.expect(r.returncode == 0, where,
                            f"netqosd rejects ConfigMap {name} key {key}{what}: "
                            f"{(r.stderr or r.stdout).strip()}")
        return text

    def mounts_of(self, spec, c, where):
        """{mountPath: (mount, volume)}; checks mounts against volumes."""
        volumes = {v.get("name"): v for v in spec.get("volumes") or []}
        mounted = {}
        for vm in c.get("volumeMounts") or []:
            v = volumes.get(vm.get("name"))
            if not self.expect(v is not None, where,
                               f"volumeMount {vm.get('name')!r} ({vm.get('mountPath')}) has no "
                               "volume"):
                continue
            self.expect(vm.get("mountPath") not in mounted, where,
                        f"two mounts at {vm.get('mountPath')}")
            mounted[vm.get("mountPath")] = (vm, v)
            if "hostPath" in v:
                # Paths the daemon records (netns paths, state) must mean the same on the host.
                self.expect(v["hostPath"].get("path") == vm.get("mountPath"), where,
                            f"hostPath {v['hostPath'].get('path')} is mounted at "
                            f"{vm.get('mountPath')}: mount host paths at the same path")
            if vm.get("mountPropagation") == "Bidirectional":
                self.expect((c.get("securityContext") or {}).get("privileged") is True, where,
                            f"{vm.get('mountPath')}: Bidirectional propagation is only allowed "
                            "for privileged containers (the API server rejects the pod)")
            if "hostPath" in v:
                path = v["hostPath"].get("path")
                writes = WRITTEN_HOST_PATHS.get(path)
                if writes:
                    self.expect(vm.get("readOnly") is not True, where,
                                f"{path} is mounted readOnly, but netqosd {writes} there")
                else:
                    self.expect(vm.get("readOnly") is True, where,
                                f"host path {path} must be mounted readOnly: true (netqosd "
                                "never writes it; docs/security.md)")
        used = {vm.get("name") for co in (spec.get("initContainers") or []) +
                (spec.get("containers") or []) for vm in co.get("volumeMounts") or []}
        for name in volumes:
            self.expect(name in used, where, f"volume {name!r} is mounted by no container")
        return mounted

    def mount_for(self, mounts, path):
        """The mount whose mountPath contains path, or None."""
        best = None
        for mp, mv in mounts.items():
            if path == mp or path.startswith(mp.rstrip("/") + "/"):
                if best is None or len(mp) > len(best[0]):
                    best = (mp, mv)
        return best

    def check_privilege(self, c, where):
        sc = c.get("securityContext") or {}
        caps = {str(x).upper().removeprefix("CAP_")
                for x in (sc.get("capabilities") or {}).get("add") or []}
        self.expect(sc.get("privileged") is True or REQUIRED_CAPS <= caps, where,
                    "neither privileged nor the capabilities "
                    f"{sorted(REQUIRED_CAPS)} (missing {sorted(REQUIRED_CAPS - caps)})")
        if sc.get("privileged") is not True:
            self.expect((sc.get("capabilities") or {}).get("drop") == ["ALL"], where,
                        "an unprivileged netqosd drops ALL capabilities and adds its own list")

    def check_daemonset(self):
        dss = self.of_kind("DaemonSet")
        if not self.expect(len(dss) == 1, "manifests", f"expected one DaemonSet, found {len(dss)}"):
            return None
        f, ds = dss[0]
        where = self.label(f, ds)
        spec = ds.get("spec") or {}
        tmpl = spec.get("template") or {}
        pod = tmpl.get("spec") or {}
        sel = (spec.get("selector") or {}).get("matchLabels") or {}
        labels = (tmpl.get("metadata") or {}).get("labels") or {}
        self.expect(sel and all(labels.get(k) == v for k, v in sel.items()), where,
                    f"selector {sel} does not match the template labels {labels}")
        us = spec.get("updateStrategy") or {}
        self.expect(us.get("type") == "RollingUpdate" and
                    (us.get("rollingUpdate") or {}).get("maxUnavailable") == 1, where,
                    "updateStrategy must be RollingUpdate with maxUnavailable: 1")
        self.expect(pod.get("hostNetwork") is True, where, "hostNetwork must be true")
        self.expect(pod.get("hostPID") is not True, where,
                    "hostPID must not be set: netqosd reads no other process's /proc entries "
                    "(docs/security.md)")
        self.expect(pod.get("dnsPolicy") == "ClusterFirstWithHostNet", where,
                    "dnsPolicy must be ClusterFirstWithHostNet (hostNetwork)")
        self.expect(pod.get("priorityClassName") == "system-node-critical", where,
                    "priorityClassName must be system-node-critical")
        selector = pod.get("nodeSelector") or {}
        self.expect(all(str(selector.get(k)) == v for k, v in NODE_SELECTOR.items()), where,
                    f"nodeSelector {selector} must hold {NODE_SELECTOR}: Linux nodes that "
                    "opted in, one by one (Katalyst's own plugin serves the same socket)")
        self.expect(any(t.get("operator") == "Exists" and not t.get("key") and
                        not t.get("effect") for t in pod.get("tolerations") or []), where,
                    "needs a toleration {operator: Exists} (run on every node, whatever taints)")
        containers = pod.get("containers") or []
        if not self.expect(containers and containers[0].get("name") == "netqosd", where,
                           "the first container must be netqosd"):
            return None
        c = containers[0]
        for extra in containers[1:]:
            self.expect(extra.get("name") == "metrics-proxy", where,
                        f"unexpected container {extra.get('name')!r} (only netqosd, and the "
                        "metrics-proxy of deploy/overlays/metrics-proxy)")
        cw = f"{where} container {c.get('name')}"
        res = c.get("resources") or {}
        self.expect({"cpu", "memory"} <= set((res.get("requests") or {})), cw,
                    "resources.requests needs cpu and memory")
        self.expect("memory" in (res.get("limits") or {}), cw, "resources.limits needs memory")
        self.check_privilege(c, cw)

        ns = ds["metadata"].get("namespace")
        env, sources = self.env_of(c, ns, cw)
        flags, raw = self.check_flags(c, env, cw, pod, ns)
        mounts = self.mounts_of(pod, c, cw)
        for path, (why, propagation) in REQUIRED_DAEMON_MOUNTS.items():
            m = mounts.get(path)
            if not self.expect(m is not None and "hostPath" in m[1], cw,
                               f"no hostPath mount of {path} ({why})"):
                continue
            if path == "/sys/fs/bpf":
                propagation = "Bidirectional" if (c.get("securityContext") or {}).get(
                    "privileged") is True else "HostToContainer"
            if propagation:
                self.expect(m[0].get("mountPropagation") == propagation, cw,
                            f"{path} must be mounted with mountPropagation {propagation}, has "
                            f"{m[0].get('mountPropagation')}")

        # The flags point at what is mounted.
        self.expect(flags.get("--enforcement") == "bpf", cw, "--enforcement=bpf is not set")
        for d in filter(None, flags.get("--qrm-socket-dirs", "").split(",")):
            self.expect(self.mount_for(mounts, d) is not None, cw,
                        f"--qrm-socket-dirs {d} is not on a mounted host path")
        source = self.pod_source(pod)
        for flag in ("--qrm-socket-dirs", "--qrm-state-dir", "--bpf-pin-dir", "--cgroup-root",
                     *(["--kubelet-pods-url"] if source == "kubelet" else []),
                     "--metrics-bind-address"):
            self.expect(flag in flags, cw, f"{flag} is not set")
        state = flags.get("--qrm-state-dir")
        if state:
            self.expect(self.mount_for(mounts, state) is not None, cw,
                        f"--qrm-state-dir {state} is not on a mounted host path")
        nri = flags.get("--nri-socket")
        if nri:
            # The socket's directory: a restarted runtime makes a new socket in it.
            self.expect(self.mount_for(mounts, os.path.dirname(nri)) is not None, cw,
                        f"--nri-socket {nri} is not on a mounted host path")
        pin = flags.get("--bpf-pin-dir")
        if pin:
            m = self.mount_for(mounts, pin)
            self.expect(m is not None and m[0] == "/sys/fs/bpf", cw,
                        f"--bpf-pin-dir {pin} is not below the bpffs mount /sys/fs/bpf")
        root = flags.get("--cgroup-root")
        if root:
            self.expect(root in mounts and "hostPath" in mounts[root][1], cw,
                        f"--cgroup-root {root} is not a mounted host path")
        if source == "kubelet":
            url = raw.get("--kubelet-pods-url", "")
            m = re.fullmatch(r"https?://(.+):(\d+)/pods", url)
            if self.expect(m is not None, cw,
                           f"--kubelet-pods-url {url!r} is not http(s)://HOST:PORT/pods"):
                self.expect(self.is_node_ip(m.group(1), sources) or m.group(1) in ("127.0.0.1",
                                                                              "localhost"), cw,
                            f"--kubelet-pods-url host {m.group(1)} is not the node (use $(NODE_IP) "
                            "from status.hostIP)")
            self.check_kubelet_ca(pod, flags, mounts, cw)
        else:
            self.check_cri_socket(flags, mounts, cw)
        self.check_tenant_policy(flags, mounts, ns, cw)
        self.check_probes(c, sources, raw.get("--metrics-bind-address"), tmpl, cw)
        self.check_image(c, cw)
        for proxy in (x for x in containers[1:] if x.get("name") == "metrics-proxy"):
            self.check_metrics_proxy(pod, c, proxy, raw.get("--metrics-bind-address", ""),
                                     ds["metadata"].get("namespace"), where)
        return ds, flags

    def check_metrics_proxy(self, pod, netqosd, proxy, bind, ns, where):
        """The authenticating proxy of deploy/overlays/metrics-proxy: it forwards /metrics alone
        to netqosd's loopback listener, serves TLS with its own certificate, runs unprivileged,
        and only it gets a service account token."""
        pw = f"{where} container metrics-proxy"
        args = {}
        for a in proxy.get("args") or []:
            k, _, v = a.partition("=")
            args[k] = v
        self.expect(args.get("--upstream") == f"http://{bind}/", pw,
                    f"--upstream={args.get('--upstream')!r} is not netqosd's listener "
                    f"http://{bind}/")
        self.expect(args.get("--allow-paths") == "/metrics", pw,
                    "--allow-paths must be /metrics alone (the probes and anything else stay "
                    "local)")
        self.expect("--secure-listen-address" in args and "--insecure-listen-address" not in args,
                    pw, "must listen with TLS only (--secure-listen-address)")
        volumes = {v.get("name"): v for v in pod.get("volumes") or []}
        mounts = {vm.get("mountPath"): volumes.get(vm.get("name")) or {}
                  for vm in proxy.get("volumeMounts") or []}
        for flag in ("--tls-cert-file", "--tls-private-key-file"):
            path = args.get(flag, "")
            on = next((v for mp, v in mounts.items() if path.startswith(mp.rstrip("/") + "/")),
                      None)
            self.expect(on is not None and "secret" in on, pw,
                        f"{flag} must name a file of a mounted Secret (a self-signed certificate "
                        "cannot be verified, and the scraper would send its token to anyone)")
        sc = proxy.get("securityContext") or {}
        self.expect(sc.get("privileged") is not True and sc.get("allowPrivilegeEscalation") is
                    False and sc.get("readOnlyRootFilesystem") is True and
                    "ALL" in ((sc.get("capabilities") or {}).get("drop") or []), pw,
                    "must run unprivileged: allowPrivilegeEscalation false, "
                    "readOnlyRootFilesystem true, capabilities drop ALL")
        token = mounts.get(SERVICE_ACCOUNT_DIR)
        self.expect(token is not None and any("serviceAccountToken" in src for src in
                                              (token.get("projected") or {}).get("sources") or []),
                    pw, f"needs a projected service account token at {SERVICE_ACCOUNT_DIR} (for "
                    "its TokenReviews)")
        self.expect(pod.get("automountServiceAccountToken") is False, where,
                    "automountServiceAccountToken must stay false: the token is projected into "
                    "the proxy alone")
        self.expect(not any(vm.get("name") in {n for n, v in volumes.items() if "projected" in v}
                            for vm in netqosd.get("volumeMounts") or []), where,
                    "netqosd mounts the proxy's token; only the proxy may have one")
        self.check_versioned_image(proxy, pw)
        sa = pod.get("serviceAccountName")
        granted = self.granted(sa, ns)
        for group, resource in (("authentication.k8s.io", "tokenreviews"),
                                ("authorization.k8s.io", "subjectaccessreviews")):
            self.expect((group, resource, "create") in granted, pw,
                        f"ServiceAccount {ns}/{sa} may not create {resource}.{group} (the "
                        "proxy's authentication and authorization of scrapers)")

    def check_cri_socket(self, flags, mounts, where):
        """The runtime's socket is on a host path mounted into the container (read-only: the
        general rule for host paths netqosd does not write)."""
        sock = flags.get("--cri-socket", "auto")  # netqosd's default
        candidates = CRI_AUTO_SOCKETS if sock == "auto" else [sock.removeprefix("unix://")]
        self.expect(any(self.mount_for(mounts, p) is not None for p in candidates), where,
                    f"--cri-socket {sock}: no host path mount holds {' or '.join(candidates)}")

    def check_tenant_policy(self, flags, mounts, ns, where):
        """The tenant policy comes from a ConfigMap mounted read-only as a directory (a subPath
        mount never sees the ConfigMap's updates), and netqosd accepts what it holds."""
        path = flags.get("--tenant-policy-file", "")
        if not self.expect(path, where,
                           "--tenant-policy-file is not set: tenants get only the built-in "
                           "policy, and the operator cannot widen it without a rollout"):
            return
        found = self.configmap_file(mounts, path, ns, where, "--tenant-policy-file",
                                    "tenant policy",
                                    "the file would never follow the ConfigMap's updates")
        if found is None:
            return
        name, _, text = found
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            f.write(text)
            f.flush()
            r = subprocess.run([self.netqosd, f"--check-tenant-policy={f.name}"],
                               capture_output=True, text=True, timeout=30)
        self.expect(r.returncode == 0, where,
                    f"netqosd refuses the tenant policy in ConfigMap {name}: "
                    f"{(r.stderr or r.stdout).strip()}")

    def check_kubelet_ca(self, pod, flags, mounts, where):
        """An https pod list is verified against a CA file that the pod has."""
        if not flags.get("--kubelet-pods-url", "").startswith("https://"):
            return
        if flags.get("--kubelet-insecure-skip-tls-verify", "false") in ("true", "1", "yes"):
            return
        ca = flags.get("--kubelet-ca-file", "")
        if not self.expect(ca, where,
                           "--kubelet-ca-file is not set: the kubelet's certificate would be "
                           "checked against the image's default CAs, not the cluster's"):
            return
        if ca.startswith(SERVICE_ACCOUNT_DIR + "/"):
            self.expect(pod.get("automountServiceAccountToken", True) is not False, where,
                        f"--kubelet-ca-file {ca} is in the service account mount, which "
                        "automountServiceAccountToken: false leaves out")
        else:
            self.expect(self.mount_for(mounts, ca) is not None, where,
                        f"--kubelet-ca-file {ca} is not on a mounted path")

    @staticmethod
    def is_node_ip(host, sources):
        """Whether host is "$(VAR)" with VAR from the downward API's status.hostIP."""
        m = re.fullmatch(r"\$\(([^)]*)\)", host)
        return bool(m) and sources.get(m.group(1)) == "status.hostIP"

    def check_probes(self, c, sources, bind, tmpl, where):
        if not bind:
            return
        m = re.fullmatch(r"(.*):(\d+)", bind)
        if not self.expect(m is not None, where,
                           f"--metrics-bind-address {bind!r} is not HOST:PORT"):
            return
        host, port = m.group(1), int(m.group(2))
        self.expect(host in LOOPBACK_HOSTS, where,
                    f"--metrics-bind-address {bind}: the metrics listener is plain HTTP without "
                    "authentication; bind it to 127.0.0.1 and expose it through an "
                    "authenticating proxy (deploy/README.md, docs/security.md)")
        named = {p.get("name"): p.get("containerPort") for p in c.get("ports") or []}
        self.expect(port in named.values(), where,
                    f"the metrics port {port} is not declared in ports")
        for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz"),
                            ("startupProbe", None)):
            p = c.get(probe)
            if p is None:
                self.expect(probe == "startupProbe", where, f"no {probe}")
                continue
            get = p.get("httpGet")
            if not self.expect(get is not None, where, f"{probe} is not an httpGet probe"):
                continue
            target = get.get("port")
            target = named.get(target, target) if isinstance(target, str) else target
            self.expect(target == port, where,
                        f"{probe} port {get.get('port')} is not the metrics port {port} "
                        "(--metrics-bind-address)")
            if path:
                self.expect(get.get("path") == path, where, f"{probe} path must be {path}")
            # The kubelet connects to httpGet.host, else the pod IP: the node IP (hostNetwork).
            probe_host = get.get("host")
            reachable = host in ("0.0.0.0", "[::]", "::") or (
                probe_host is None and self.is_node_ip(host, sources)) or (
                probe_host is not None and probe_host == host)
            self.expect(reachable, where,
                        f"{probe} connects to {probe_host or 'the pod IP (= node IP)'}, but the "
                        f"metrics listener is bound to {host}")
        ann = (tmpl.get("metadata") or {}).get("annotations") or {}
        if host in LOOPBACK_HOSTS:
            self.expect(str(ann.get("prometheus.io/scrape", "")).lower() != "true", where,
                        "prometheus.io/scrape: a Prometheus elsewhere cannot reach a listener on "
                        f"{host}; scrape the authenticating proxy instead (deploy/README.md)")
        if "prometheus.io/port" in ann:
            self.expect(str(ann["prometheus.io/port"]) == str(port), where,
                        f"prometheus.io/port {ann['prometheus.io/port']} is not {port}")

    def check_versioned_image(self, c, where):
        image = c.get("image", "")
        tag = image.rsplit(":", 1)[1] if ":" in image.rsplit("/", 1)[-1] else ""
        self.expect(tag and tag != "latest", where, f"image {image!r} needs a version tag")
        return tag

    def check_image(self, c, where):
        tag = self.check_versioned_image(c, where)
        if self.version:
            self.expect(tag == self.version, where,
                        f"image tag {tag!r} is not netqosd's version {self.version!r}")

    def check_uninstall_job(self, ds_flags):
        jobs = self.of_kind("Job")
        self.expect(jobs, "manifests", "no uninstall Job")
        ds_image = None
        for _, ds in self.of_kind("DaemonSet"):
            cs = ((ds.get("spec") or {}).get("template") or {}).get("spec", {}).get("containers")
            ds_image = cs[0].get("image") if cs else None
        for f, job in jobs:
            where = self.label(f, job)
            pod = ((job.get("spec") or {}).get("template") or {}).get("spec") or {}
            self.expect(pod.get("hostNetwork") is True, where,
                        "hostNetwork must be true (the qdiscs are on the node's NICs)")
            self.expect(pod.get("nodeName"), where, "nodeName (the node to clean) is not set")
            self.expect(pod.get("hostPID") is not True, where,
                        "hostPID must not be set (docs/security.md)")
            self.expect(pod.get("restartPolicy") in ("Never", "OnFailure"), where,
                        "restartPolicy must be Never or OnFailure")
            for c in pod.get("containers") or []:
                cw = f"{where} container {c.get('name')}"
                self.expect(c.get("image") == ds_image, cw,
                            f"image {c.get('image')!r} differs from the DaemonSet's {ds_image!r}")
                self.check_privilege(c, cw)
                env, _ = self.env_of(c, job["metadata"].get("namespace"), cw)
                flags, _ = self.check_flags(c, env, cw, pod, job["metadata"].get("namespace"))
                self.mounts_of(pod, c, cw)
                self.expect("--uninstall" in flags, cw, "does not run netqosd --uninstall")
                if ds_flags is None:
                    continue
                # Uninstall must look where the daemon installed, with the daemon's settings
                # (its config file: the NICs, the checkpoint layout for Katalyst).
                for flag in ("--qrm-state-dir", "--bpf-pin-dir", "--enforce-nics", "--config",
                             "--katalyst-checkpoint-layout"):
                    self.expect(flags.get(flag) == ds_flags.get(flag), cw,
                                f"{flag}={flags.get(flag)!r} differs from the DaemonSet's "
                                f"{ds_flags.get(flag)!r}")
                mounts = {vm.get("mountPath") for vm in c.get("volumeMounts") or []}
                for path in ("/sys/fs/bpf", "/var/lib/katalyst/qrm_advisor", "/var/run/netns"):
                    self.expect(path in mounts, cw, f"does not mount {path}")

    def run(self):
        self.check_documents()
        self.check_namespaces()
        self.check_rbac()
        ds = self.check_daemonset()
        self.check_uninstall_job(ds[1] if ds else None)
        return self.failures


# ---- netqosd's config file (CLI11's format, what `netqosd --print-config` writes) -------------

def config_keys(text):
    """The keys a config file sets: `key = value` lines (and a bare `key`, CLI11's true), not
    comments."""
    keys = []
    for line in text.splitlines():
        line = line.strip()
        if len(line) < 3 or line[0] in "#;":
            continue
        keys.append(line.partition("=")[0].strip().strip("\"'"))
    return keys


def parse_config(text):
    """`netqosd --print-config` output as {key: value}: strings unquoted, lists joined with
    commas (as a flag would take them), true/false and numbers as written."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        key, _, value = line.partition("=")
        if value.startswith("["):
            value = ",".join(a or b for a, b in re.findall(r'"([^"]*)"|\'([^\']*)\'', value))
        elif len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        out[key] = value
    return out


# ---- inputs ------------------------------------------------------------------------------------

# The manifests are rendered by kustomize, as `kubectl apply -k` does: the base (deploy/base), and
# each overlay of deploy/overlays/ on top of it. The renderer is kubectl's embedded kustomize from
# Debian bookworm's kubernetes-client (kubectl 1.20, kustomize v2.0.3): CI machines have only
# Debian's packages, and manifests that the oldest kustomize renders also render with today's v5
# (`bases:`, `patchesJson6902` and `patchesStrategicMerge` are deprecated there, not gone).
# --kubectl (or NETQOS_KUBECTL) names another one (kubectl 1.32, kustomize v5, renders them too).
RENDERER_PACKAGE = "kubernetes-client"
SKIPPED = 77  # CTest's SKIP_RETURN_CODE for this test: no renderer, outside CI
DS_ARGS_PATH = "/spec/template/spec/containers/0/args/-"


class RendererMissing(Exception):
    pass


def renderer_cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.environ.get("HOME") or "/root",
                                                           ".cache")
    return os.path.join(base, "netqos", RENDERER_PACKAGE)


def debian_kubectl():
    """kubectl from Debian's kubernetes-client, unpacked into a private cache (not installed: a
    kubectl of another origin may own /usr/bin/kubectl). Fetched with the machine's apt
    configuration on first use."""
    cache = renderer_cache_dir()
    kubectl = os.path.join(cache, "root", "usr", "bin", "kubectl")
    if os.access(kubectl, os.X_OK):
        return kubectl
    os.makedirs(cache, exist_ok=True)
    work = tempfile.mkdtemp(prefix=".fetch.", dir=cache)
    try:
        r = subprocess.run(["apt-get", "download", RENDERER_PACKAGE], cwd=work,
                           capture_output=True, text=True, timeout=600)
        debs = glob.glob(os.path.join(work, "*.deb"))
        if r.returncode != 0 or len(debs) != 1:
            raise RendererMissing(f"apt-get download {RENDERER_PACKAGE} failed (exit "
                                  f"{r.returncode}): {(r.stderr or r.stdout).strip()[-400:]}")
        root = os.path.join(work, "root")
        r = subprocess.run(["dpkg-deb", "-x", debs[0], root], capture_output=True, text=True,
                           timeout=120)
        if r.returncode != 0 or not os.access(os.path.join(root, "usr", "bin", "kubectl"),
                                              os.X_OK):
            raise RendererMissing(f"dpkg-deb -x {os.path.basename(debs[0])}: no usr/bin/kubectl "
                                  f"({r.stderr.strip()})")
        shutil.rmtree(os.path.join(cache, "root"), ignore_errors=True)
        os.rename(root, os.path.join(cache, "root"))  # atomic: a killed fetch leaves no half tree
    except (OSError, subprocess.SubprocessError) as e:
        raise RendererMissing(f"fetching {RENDERER_PACKAGE}: {e}") from e
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return kubectl


def render(kubectl, directory):
    """The documents `kubectl kustomize DIRECTORY` renders."""
    r = subprocess.run([kubectl, "kustomize", directory], capture_output=True, text=True,
                       timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"kubectl kustomize {directory} failed: {r.stderr.strip()}")
    return [d for d in yaml.safe_load_all(r.stdout) if d is not None]


def read_yaml(path):
    with open(path) as fh:
        return [d for d in yaml.safe_load_all(fh) if d is not None]


def overlay_names(deploy_dir):
    return sorted(os.path.basename(os.path.dirname(k)) for k in
                  glob.glob(os.path.join(deploy_dir, "overlays", "*", "kustomization.yaml")))


def load(deploy_dir, kubectl):
    """(files, base documents, {overlay: documents}): rendered, with the uninstall Job (applied
    on its own, in the DaemonSet's namespace) added to each."""
    base_dir = os.path.join(deploy_dir, "base")
    files = sorted(glob.glob(os.path.join(base_dir, "*.yaml")) +
                   glob.glob(os.path.join(deploy_dir, "uninstall", "*.yaml")))
    job = [(f, d) for f in glob.glob(os.path.join(deploy_dir, "uninstall", "*.yaml"))
           for d in read_yaml(f)]

    def with_job(name, rendered):
        docs = [(name, d) for d in rendered]
        ns = next((d["metadata"].get("namespace") for _, d in docs
                   if d.get("kind") == "DaemonSet"), None)
        for f, d in copy.deepcopy(job):
            d.setdefault("metadata", {})["namespace"] = ns
            docs.append((f, d))
        return docs

    base = with_job("deploy/base", render(kubectl, base_dir))
    overlays = {name: with_job(f"deploy/overlays/{name}",
                               render(kubectl, os.path.join(deploy_dir, "overlays", name)))
                for name in overlay_names(deploy_dir)}
    return files, base, overlays


def kustomization(directory):
    with open(os.path.join(directory, "kustomization.yaml")) as fh:
        return yaml.safe_load(fh) or {}


def own_args(overlay_dir):
    """The netqosd arguments an overlay appends: the values of its JSON 6902 `add` operations on
    the DaemonSet's first container's args."""
    out = []
    for p in kustomization(overlay_dir).get("patchesJson6902") or []:
        if (p.get("target") or {}).get("kind") != "DaemonSet":
            continue
        for op in read_yaml(os.path.join(overlay_dir, p["path"]))[0]:
            if op.get("op") == "add" and op.get("path") == DS_ARGS_PATH:
                out.append(str(op["value"]))
    return out


def daemonset_args(docs):
    ds = next((d for _, d in docs if d.get("kind") == "DaemonSet"), None)
    return [str(a) for a in _ctr(ds).get("args") or []] if ds else None


def daemonset_image(docs):
    ds = next((d for _, d in docs if d.get("kind") == "DaemonSet"), None)
    return _ctr(ds).get("image") if ds else None


def check_composition(deploy_dir, kubectl, base, overlays, base_args=None, overlay_args=None):
    """How the kustomizations fit together: every base file is a resource; deploy/ renders the
    base; the image is the base's images: entry; each overlay's netqosd args are exactly the
    base's followed by the ones it adds itself (an overlay that replaces the list drifts from the
    base as flags are added to it). base_args/overlay_args replace the rendered ones (self-test)."""
    failures = []
    base_dir = os.path.join(deploy_dir, "base")
    k = kustomization(base_dir)
    listed = set(k.get("resources") or [])
    for f in sorted(glob.glob(os.path.join(base_dir, "*.yaml"))):
        name = os.path.basename(f)
        if name != "kustomization.yaml" and name not in listed:
            failures.append(f"deploy/base/{name} is not in deploy/base/kustomization.yaml's "
                            "resources: `kubectl apply -k` would leave it out")
    top = render(kubectl, deploy_dir)
    if top != [d for n, d in base if n == "deploy/base"]:
        failures.append("`kubectl kustomize deploy` does not render the same as deploy/base")
    images = [i for i in k.get("images") or [] if i.get("name") ==
              (daemonset_image(base) or "").rsplit(":", 1)[0] or i.get("newName") ==
              (daemonset_image(base) or "").rsplit(":", 1)[0]]
    if len(images) != 1:
        failures.append(f"deploy/base/kustomization.yaml has no images: entry for the DaemonSet's "
                        f"image {daemonset_image(base)!r} (set the image with kustomize, not sed)")
    else:
        entry = images[0]
        want = f"{entry.get('newName') or entry['name']}:{entry.get('newTag')}"
        if daemonset_image(base) != want:
            failures.append(f"the DaemonSet's image {daemonset_image(base)!r} is not the images: "
                            f"entry's {want!r}")
    want_base = base_args if base_args is not None else daemonset_args(base)
    for name, docs in overlays.items():
        overlay_dir = os.path.join(deploy_dir, "overlays", name)
        if "images" not in kustomization(overlay_dir) and \
                daemonset_image(docs) != daemonset_image(base):
            failures.append(f"overlay {name}: image {daemonset_image(docs)!r} is not the base's")
        got = (overlay_args or {}).get(name, daemonset_args(docs))
        adds = own_args(overlay_dir)
        want = want_base + adds
        if got != want:
            missing = [a for a in want if a not in got]
            extra = [a for a in got if a not in want]
            failures.append(
                f"overlay {name}: netqosd's args are not the base's followed by the overlay's own "
                f"{adds}: missing {missing}, not the base's nor the overlay's own {extra}"
                + ("" if missing or extra else ", in another order")
                + " (append with a JSON 6902 `add` to " + DS_ARGS_PATH + ", never replace the "
                "list)")
    return failures


def netqosd_facts(netqosd):
    r = subprocess.run([netqosd, "--help"], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise RuntimeError(f"{netqosd} --help exited {r.returncode}: {r.stderr.strip()}")
    flags = set(re.findall(r"(?<![\w-])(--[a-z0-9][a-z0-9-]*)", r.stdout))
    v = subprocess.run([netqosd, "--version"], capture_output=True, text=True, timeout=30)
    m = re.search(r"(\d+\.\d+\.\d+\S*)", v.stdout)
    return flags, (m.group(1) if m else None)


# ---- self-test: every mutation must be reported ------------------------------------------------

def _ds(docs):
    return next(d for _, d in docs if d.get("kind") == "DaemonSet")


def _job(docs):
    return next(d for _, d in docs if d.get("kind") == "Job")


def _pod(d):
    return d["spec"]["template"]["spec"]


def _ctr(d):
    return _pod(d)["containers"][0]


def _mount(d, path):
    return next(m for m in _ctr(d)["volumeMounts"] if m["mountPath"] == path)


def _set_arg(d, flag, value):
    args = _ctr(d)["args"]
    for i, a in enumerate(args):
        if a.partition("=")[0] == flag:
            if value is None:
                del args[i]
            else:
                args[i] = f"{flag}={value}"
            return
    args.append(f"{flag}={value}")


def _drop_mount(d, path):
    c = _ctr(d)
    name = _mount(d, path)["name"]
    c["volumeMounts"] = [m for m in c["volumeMounts"] if m["mountPath"] != path]
    _pod(d)["volumes"] = [v for v in _pod(d)["volumes"] if v["name"] != name]


def _configmap(docs):
    return next(d for _, d in docs if d.get("kind") == "ConfigMap")


def _tenant_policy(docs):
    return next(d for _, d in docs if d.get("kind") == "ConfigMap" and
                d["metadata"]["name"] == "netqosd-tenant-policy")


def _add_setting(docs, line):
    cm = _configmap(docs)
    cm["data"]["netqosd.conf"] = cm["data"]["netqosd.conf"] + line + "\n"


def _rename_key(obj, old, new):
    obj[new] = obj.pop(old)


MUTATIONS = [
    ("unknown flag", lambda docs: _ctr(_ds(docs))["args"].append("--no-such-flag=1"),
     "not in `netqosd --help`"),
    ("bad flag value", lambda docs: _set_arg(_ds(docs), "--enforcement", "ebpf"),
     "rejects the expanded command line"),
    ("typo in a field", lambda docs: _rename_key(_mount(_ds(docs), "/sys/fs/bpf"),
                                                 "mountPropagation", "mountPropogation"),
     "unknown VolumeMount field"),
    ("mount without volume", lambda docs: _pod(_ds(docs))["volumes"].pop(0),
     "has no volume"),
    ("bpffs Bidirectional unprivileged", lambda docs: _mount(_ds(docs), "/sys/fs/bpf").update(
        mountPropagation="Bidirectional"), "Bidirectional propagation is only allowed"),
    ("no node opt-in", lambda docs: _pod(_ds(docs))["nodeSelector"].pop("netqos.io/enabled"),
     "nodeSelector"),
    ("capabilities not dropped", lambda docs: _ctr(_ds(docs))["securityContext"][
        "capabilities"].pop("drop"), "drops ALL capabilities"),
    ("no cgroup mount", lambda docs: _drop_mount(_ds(docs), "/sys/fs/cgroup"),
     "no hostPath mount of /sys/fs/cgroup"),
    ("no plugins_registry", lambda docs: _drop_mount(_ds(docs),
                                                     "/var/lib/kubelet/plugins_registry"),
     "no hostPath mount of /var/lib/kubelet/plugins_registry"),
    ("no state dir", lambda docs: _drop_mount(_ds(docs), "/var/lib/katalyst/qrm_advisor"),
     "no hostPath mount of /var/lib/katalyst/qrm_advisor"),
    ("no netns", lambda docs: _drop_mount(_ds(docs), "/var/run/netns"),
     "no hostPath mount of /var/run/netns"),
    ("state dir elsewhere", lambda docs: _set_arg(_ds(docs), "--qrm-state-dir", "/var/lib/netqos"),
     "--qrm-state-dir /var/lib/netqos is not on a mounted host path"),
    ("pin dir outside bpffs", lambda docs: _set_arg(_ds(docs), "--bpf-pin-dir", "/run/netqos"),
     "is not below the bpffs mount"),
    ("capability missing", lambda docs: _ctr(_ds(docs))["securityContext"]["capabilities"][
        "add"].remove("NET_ADMIN"), "missing ['NET_ADMIN']"),
    ("no liveness probe", lambda docs: _ctr(_ds(docs)).pop("livenessProbe"), "no livenessProbe"),
    ("probe on another port", lambda docs: _ctr(_ds(docs))["readinessProbe"]["httpGet"].update(
        port=9999), "is not the metrics port"),
    ("metrics on the node IP", lambda docs: _set_arg(_ds(docs), "--metrics-bind-address",
                                                     "$(NODE_IP):9465"),
     "the metrics listener is plain HTTP without authentication"),
    ("metrics on every address", lambda docs: _set_arg(_ds(docs), "--metrics-bind-address",
                                                       ":9465"),
     "the metrics listener is plain HTTP without authentication"),
    ("probe to the pod IP", lambda docs: _ctr(_ds(docs))["livenessProbe"]["httpGet"].pop("host"),
     "livenessProbe connects to the pod IP (= node IP), but the metrics listener is bound to "
     "127.0.0.1"),
    ("scrape annotation", lambda docs: _ds(docs)["spec"]["template"]["metadata"].setdefault(
        "annotations", {}).update({"prometheus.io/scrape": "true"}), "prometheus.io/scrape"),
    ("hostPID", lambda docs: _pod(_ds(docs)).update(hostPID=True), "hostPID must not be set"),
    ("hostPID in the Job", lambda docs: _pod(_job(docs)).update(hostPID=True),
     "hostPID must not be set"),
    ("netns writable", lambda docs: _mount(_ds(docs), "/var/run/netns").pop("readOnly"),
     "host path /var/run/netns must be mounted readOnly"),
    ("cgroupfs writable", lambda docs: _mount(_ds(docs), "/sys/fs/cgroup").update(
        readOnly=False), "host path /sys/fs/cgroup must be mounted readOnly"),
    ("netns writable in the Job", lambda docs: _mount(_job(docs), "/var/run/netns").pop(
        "readOnly"), "host path /var/run/netns must be mounted readOnly"),
    ("state dir read-only", lambda docs: _mount(_ds(docs), "/var/lib/katalyst/qrm_advisor").update(
        readOnly=True), "netqosd writes the checkpoint"),
    ("bpffs read-only in the Job", lambda docs: _mount(_job(docs), "/sys/fs/bpf").update(
        readOnly=True), "netqosd pins the programs"),
    ("no metrics flag", lambda docs: _set_arg(_ds(docs), "--metrics-bind-address", None),
     "--metrics-bind-address is not set"),
    ("images differ", lambda docs: _ctr(_job(docs)).update(image="example.com/other:0.1.0"),
     "differs from the DaemonSet's"),
    ("missing ServiceAccount", lambda docs: docs.remove(
        next(x for x in docs if x[1].get("kind") == "ServiceAccount")), "is not defined"),
    ("nodes/proxy in the default RBAC", lambda docs: docs.append(("rbac.yaml", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "extra"},
        "rules": [{"apiGroups": [""], "resources": ["nodes/proxy"], "verbs": ["get"]}]})),
     "the default manifests must not grant nodes/proxy"),
    ("token mounted", lambda docs: _pod(_ds(docs)).update(automountServiceAccountToken=True),
     "automountServiceAccountToken must be false"),
    ("no CRI socket mount", lambda docs: _drop_mount(_ds(docs), "/run/containerd"),
     "--cri-socket auto: no host path mount holds"),
    ("CRI socket elsewhere", lambda docs: _add_setting(docs, 'cri-socket = "unix:///run/x.sock"'),
     "no host path mount holds"),
    ("CRI socket writable", lambda docs: _mount(_ds(docs), "/run/containerd").pop("readOnly"),
     "host path /run/containerd must be mounted readOnly"),
    ("config file missing", lambda docs: _configmap(docs)["data"].pop("netqosd.conf"),
     "has no key 'netqosd.conf'"),
    ("config file not mounted", lambda docs: _drop_mount(_ds(docs), "/etc/netqos/config"),
     "is not on a mounted ConfigMap"),
    ("config file writable", lambda docs: _mount(_ds(docs), "/etc/netqos/config").pop("readOnly"),
     "the config mount /etc/netqos/config must be readOnly"),
    ("config file on a subPath", lambda docs: _mount(_ds(docs), "/etc/netqos/config").update(
        subPath="netqosd.conf"), "uses a subPath"),
    ("unknown key in the config file", lambda docs: _add_setting(docs, 'enforce-nic = ["eth0"]'),
     "unknown key \"enforce-nic\""),
    ("capacity rate above 1 in the config file", lambda docs: _add_setting(
        docs, "network-resource-plugin-egress-capacity-rate = 5"), "must be a fraction"),
    ("bad commented-out example", lambda docs: _add_setting(docs, '# shaping-mode = "fast"'),
     "with its commented-out examples enabled"),
    ("config key the args override", lambda docs: _add_setting(docs, 'qrm-state-dir = "/x"'),
     "the args win"),
    ("uninstall without the config file", lambda docs: _set_arg(_job(docs), "--config", None),
     "--config=None differs from the DaemonSet's"),
    ("undefined $(VAR)", lambda docs: _ctr(_ds(docs))["args"].append("--log-level=$(NOPE)"),
     "$(NOPE) is not defined in env"),
    ("no hostNetwork", lambda docs: _pod(_ds(docs)).update(hostNetwork=False),
     "hostNetwork must be true"),
    ("maxUnavailable 2", lambda docs: _ds(docs)["spec"]["updateStrategy"]["rollingUpdate"].update(
        maxUnavailable=2), "maxUnavailable: 1"),
    ("no tolerations", lambda docs: _pod(_ds(docs)).pop("tolerations"), "toleration"),
    ("uninstall elsewhere", lambda docs: _set_arg(_job(docs), "--bpf-pin-dir", "/sys/fs/bpf/x"),
     "--bpf-pin-dir='/sys/fs/bpf/x' differs from the DaemonSet's"),
    ("host path moved", lambda docs: _mount(_ds(docs), "/var/run/netns").update(
        mountPath="/host/netns"), "mount host paths at the same path"),
    ("no tenant policy", lambda docs: _set_arg(_ds(docs), "--tenant-policy-file", None),
     "--tenant-policy-file is not set"),
    ("tenant policy not mounted", lambda docs: _drop_mount(_ds(docs), "/etc/netqos/tenant-policy"),
     "is not on a mounted ConfigMap"),
    ("tenant policy writable", lambda docs: _mount(_ds(docs), "/etc/netqos/tenant-policy").pop(
        "readOnly"), "must be readOnly: true"),
    ("tenant policy on a subPath", lambda docs: _mount(_ds(docs), "/etc/netqos/tenant-policy")
     .update(subPath="policy.json"), "uses a subPath"),
    ("tenant policy invalid", lambda docs: _tenant_policy(docs)["data"].update(
        {"policy.json": '{"version": 1, "default": {"borrow": "yes"}}'}),
     "netqosd refuses the tenant policy"),
    ("tenant policy key missing", lambda docs: _rename_key(_tenant_policy(docs)["data"],
                                                           "policy.json", "policy.yaml"),
     "has no key 'policy.json'"),
]

# Broken variants of the kubelet-pods overlay (applied on top of the default manifests).
OVERLAY_MUTATIONS = [
    ("no kubelet CA", lambda docs: _set_arg(_ds(docs), "--kubelet-ca-file", None),
     "--kubelet-ca-file is not set"),
    ("kubelet CA and skip-verify", lambda docs: _ctr(_ds(docs))["args"].append(
        "--kubelet-insecure-skip-tls-verify=true"), "contradict each other"),
    ("RBAC without nodes/proxy", lambda docs: [
        r.update(resources=["nodes/pods"]) for _, d in docs if d.get("kind") == "ClusterRole"
        for r in d["rules"]], "is not granted get on nodes/proxy"),
    ("overlay without a token", lambda docs: _pod(_ds(docs)).update(
        automountServiceAccountToken=False), "no token for the kubelet API"),
    ("kubelet URL not the node", lambda docs: _set_arg(_ds(docs), "--kubelet-pods-url",
                                                       "https://10.0.0.1:10250/pods"),
     "is not the node"),
]


def _proxy(docs):
    return next(c for c in _pod(_ds(docs))["containers"] if c["name"] == "metrics-proxy")


def _set_proxy_arg(docs, flag, value):
    p = _proxy(docs)
    p["args"] = [a for a in p["args"] if a.partition("=")[0] != flag]
    if value is not None:
        p["args"].append(f"{flag}={value}")


# Broken variants of the metrics-proxy overlay (applied on top of the default manifests).
PROXY_MUTATIONS = [
    ("proxy upstream elsewhere", lambda docs: _set_proxy_arg(docs, "--upstream",
                                                             "http://127.0.0.1:9999/"),
     "is not netqosd's listener"),
    ("proxy lets the probes through", lambda docs: _set_proxy_arg(docs, "--allow-paths",
                                                                  "/metrics,/healthz"),
     "--allow-paths must be /metrics alone"),
    ("proxy without TLS", lambda docs: (_set_proxy_arg(docs, "--secure-listen-address", None),
                                        _set_proxy_arg(docs, "--insecure-listen-address",
                                                       "$(NODE_IP):9443")),
     "must listen with TLS only"),
    ("proxy self-signed", lambda docs: _set_proxy_arg(docs, "--tls-cert-file", None),
     "--tls-cert-file must name a file of a mounted Secret"),
    ("proxy privileged", lambda docs: _proxy(docs)["securityContext"].update(
        allowPrivilegeEscalation=True), "must run unprivileged"),
    ("token in netqosd", lambda docs: _ctr(_ds(docs))["volumeMounts"].append(
        {"name": "metrics-proxy-token", "mountPath": SERVICE_ACCOUNT_DIR, "readOnly": True}),
     "netqosd mounts the proxy's token"),
    ("token for the whole pod", lambda docs: _pod(_ds(docs)).update(
        automountServiceAccountToken=True), "automountServiceAccountToken must stay false"),
    ("proxy cannot review tokens", lambda docs: [
        r.update(verbs=["get"]) for _, d in docs if d.get("kind") == "ClusterRole" and
        d["metadata"]["name"] == "netqosd-metrics-proxy" for r in d["rules"]],
     "may not create tokenreviews"),
    ("netqosd on the node address", lambda docs: _set_arg(_ds(docs), "--metrics-bind-address",
                                                          "$(NODE_IP):9465"),
     "bind it to 127.0.0.1"),
]


# Broken variants of the nri overlay.
NRI_MUTATIONS = [
    ("NRI socket not mounted", lambda docs: _drop_mount(_ds(docs), "/var/run/nri"),
     "--nri-socket /var/run/nri/nri.sock is not on a mounted host path"),
    ("NRI socket writable", lambda docs: _mount(_ds(docs), "/var/run/nri").pop("readOnly"),
     "host path /var/run/nri must be mounted readOnly"),
]


# Broken variants of the privileged overlay.
PRIVILEGED_MUTATIONS = [
    ("privileged bpffs one way", lambda docs: _mount(_ds(docs), "/sys/fs/bpf").update(
        mountPropagation="HostToContainer"),
     "/sys/fs/bpf must be mounted with mountPropagation Bidirectional"),
]


def composition_self_test(deploy_dir, kubectl, docs, rendered):
    """An overlay whose args drop one of the base's (or add one the overlay does not own) is
    reported, and so is an image that is not the images: entry's."""
    problems = []
    base_args = daemonset_args(docs)
    for name, applied in rendered.items():
        for what, args in (("drops the base's last flag",
                            [a for a in daemonset_args(applied) if a != base_args[-1]]),
                           ("adds a flag of its own", daemonset_args(applied) + ["--v=4"])):
            got = check_composition(deploy_dir, kubectl, docs, rendered,
                                    overlay_args={name: args})
            if not any(f.startswith(f"overlay {name}: netqosd's args") for f in got):
                problems.append(f"overlay {name} that {what} was not reported; got {got}")
    broken = copy.deepcopy(docs)
    _ctr(_ds(broken))["image"] = "registry.example.com/netqos/netqosd:latest"
    got = check_composition(deploy_dir, kubectl, broken, rendered)
    if not any("is not the images: entry's" in f for f in got):
        problems.append(f"an image other than the images: entry's was not reported; got {got}")
    return problems


def self_test(docs, netqosd, help_flags, version, mutations=None):
    """Each mutation must add a failure containing its expected text (failures the unbroken
    manifests already have do not count)."""
    baseline = set(Checker(docs, netqosd, help_flags, version).run())
    problems = []
    for name, mutate, expected in (MUTATIONS if mutations is None else mutations):
        broken = copy.deepcopy(docs)
        try:
            mutate(broken)
        except (StopIteration, KeyError, IndexError) as e:
            problems.append(f"mutation {name!r} does not apply to these manifests: {e!r}")
            continue
        failures = [f for f in Checker(broken, netqosd, help_flags, version).run()
                     if f not in baseline]
        if not any(expected in f for f in failures):
            problems.append(f"mutation {name!r} was not reported (expected {expected!r}); "
                            f"got {failures}")
    return problems


def find_renderer(explicit):
    """kubectl for `kubectl kustomize`, or None after saying why (a failure under CI=true)."""
    if explicit:
        return explicit
    try:
        return debian_kubectl()
    except RendererMissing as e:
        print(f"{'FAIL' if os.environ.get('CI') == 'true' else 'SKIP'}: no kustomize renderer: "
              f"{e} (scripts/install-deps.sh's apt sources must offer {RENDERER_PACKAGE}; or "
              "give --kubectl)")
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--netqosd", help="the built netqosd binary (required but with "
                    "--fetch-renderer)")
    ap.add_argument("--deploy-dir", default=os.path.join(os.path.dirname(__file__), "..", "..",
                                                         "deploy"))
    ap.add_argument("--kubectl", default=os.environ.get("NETQOS_KUBECTL"),
                    help="the kubectl whose `kubectl kustomize` renders the manifests (default: "
                         "Debian's kubernetes-client, fetched into ~/.cache/netqos)")
    ap.add_argument("--fetch-renderer", action="store_true",
                    help="only fetch the renderer into the cache and print its path "
                         "(scripts/install-deps.sh)")
    ap.add_argument("--self-test", action="store_true",
                    help="instead of checking the manifests, check that broken variants of them "
                         "are reported")
    a = ap.parse_args()

    if not a.fetch_renderer and not a.netqosd:
        ap.error("--netqosd is required")
    kubectl = find_renderer(a.kubectl)
    if kubectl is None:
        return 1 if os.environ.get("CI") == "true" or a.fetch_renderer else SKIPPED
    if a.fetch_renderer:
        print(kubectl)
        return 0
    try:
        files, docs, rendered = load(a.deploy_dir, kubectl)
    except (yaml.YAMLError, RuntimeError) as e:
        print(f"FAIL: {e}")
        return 1
    if not docs:
        print(f"FAIL: no manifests under {a.deploy_dir}")
        return 1
    help_flags, version = netqosd_facts(a.netqosd)
    mutations = {"kubelet-pods": OVERLAY_MUTATIONS, "metrics-proxy": PROXY_MUTATIONS,
                 "privileged": PRIVILEGED_MUTATIONS, "nri": NRI_MUTATIONS}
    if a.self_test:
        problems = self_test(docs, a.netqosd, help_flags, version)
        for name, applied in rendered.items():
            problems += [f"overlay {name}: {p}" for p in
                         self_test(applied, a.netqosd, help_flags, version,
                                   mutations.get(name, []))]
        problems += composition_self_test(a.deploy_dir, kubectl, docs, rendered)
        for p in problems:
            print("FAIL: self-test: " + p)
        if problems:
            return 1
        print(f"ok: all {len(MUTATIONS)} broken variants of the manifests, "
              + ", ".join(f"{len(m)} of the {n} overlay" for n, m in mutations.items())
              + " and the overlays' drifted args were reported")
        return 0
    checker = Checker(docs, a.netqosd, help_flags, version)
    failures = checker.run()
    # Each overlay is checked as rendered: by the rules of what it changes (kubelet-pods:
    # nodes/proxy granted, the token, the kubelet's certificate verified; metrics-proxy: the
    # proxy's; privileged: Bidirectional bpffs), and its args against the base's.
    counts = []
    for name, applied in rendered.items():
        overlay_checker = Checker(applied, a.netqosd, help_flags, version)
        failures += [f"with {name}: {f}" for f in overlay_checker.run()]
        counts.append(f"{name}: {overlay_checker.checks} checks")
    failures += check_composition(a.deploy_dir, kubectl, docs, rendered)
    for f in failures:
        print("FAIL: " + f)
    if failures:
        print(f"{len(failures)} problem(s) in {len(files)} manifest files and the overlays")
        return 1
    print(f"ok: {len(docs)} documents in {len(files)} files, {checker.checks} checks, rendered "
          f"by {kubectl}; overlays {', '.join(counts)}; each overlay's args are the base's plus "
          "its own")
    return 0


if __name__ == "__main__":
    sys.exit(main())

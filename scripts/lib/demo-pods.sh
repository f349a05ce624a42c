# shellcheck shell=bash
# The demo's pods, sourced by scripts/demo-run.sh and tests/monitoring/prometheus_live_test.sh:
# five containers (the C_* arrays, indexed 0..4), the kubelet's pod list that names them, netqosd
# started the way the demo runs it, and the kubelet's side: hints and Allocate for each, then the
# runtime starting their cgroups. Expects: ctl() (netqosctl on the demo's socket), show() (prints
# a command), fail(), NETQOSD and the lab of demo-lab.sh (WORK, LOG, SOCK_DIR, STATE_DIR, ...).
# DAEMON_FLAGS (an array, may be unset) adds flags to netqosd's command line; POD_LIST_EXTRA adds
# raw JSON items to the pod list (pods the demo does not allocate).

# Four containers of three QoS levels allocated through the plugin, and a fifth with no
# allocation capped by the standard bandwidth annotations alone. The kubelet's pod list (file://
# stands in for its API) tells netqosd which cgroup belongs to which container, and carries the
# pods' annotations: web asks for DSCP EF on its packets, cache may borrow beyond its allocation
# up to its QoS level's ceiling (docs/enforcement.md, "The bandwidth model"); the tenant policy
# lets namespace demo ask for both (docs/tenant-policy.md, written by start_daemon).
C_LABEL=(web/app db/db batch/worker cache/app video/app)
C_POD=(web db batch cache video)
C_CONTAINER=(app db worker app app)
C_UID=(web-1 db-1 batch-1 cache-1 video-1)
C_CID=(c0ffee0a c0ffee0b c0ffee0c c0ffee0d c0ffee0e)
C_QOS=(shared_cores dedicated_cores reclaimed_cores shared_cores shared_cores)
C_POD_QOS=(Burstable Guaranteed BestEffort Burstable Burstable)
C_MBPS=(100 200 50 150 0)  # 0: not allocated
C_PORT=(15401 15402 15403 15404 15405)
C_ANN=(', "netqos.io/dscp": "EF"' '' '' ', "netqos.io/container-ceil": "level"'
  ', "kubernetes.io/egress-bandwidth": "20M", "kubernetes.io/ingress-bandwidth": "40M"')
# What each container's leaf holds it to when it sends: its allocation, at least its allocation
# (it borrows), or its annotated cap.
C_EXPECT=(100 200 50 150 20)
C_BORROWS=(0 0 0 1 0)
C_CAP=("100 (alloc)" "200 (alloc)" "50 (alloc)" ">=150 (borrows)" "20 (annotation)")
# The DS field each sends with: web's annotation, then --qos-level-dscp's per-level marks, and CS0
# for the others (--dscp-default auto: some levels are marked, so no sender chooses its own).
C_WANT_DSCP=(46 34 8 0 0)
# network_enhancement: host_ns pins a container to host NICs (NIC A), anti_host_ns to the NICs of
# other namespaces (NIC B); topology_affinity_restricted keeps db on its NUMA hint.
ENH=katalyst.kubewharf.io/network_enhancement
C_ENH=('{"namespace_type":"host_ns"}'
  '{"namespace_type":"host_ns","topology_affinity_restricted":"true"}'
  '{"namespace_type":"anti_host_ns"}' '{"namespace_type":"anti_host_ns"}')
C_CG=() C_NIC=() C_NETNS=() C_NETNS_PATH=() C_REMOTE=() C_LEAF=() C_PRIO=()
for i in "${!C_LABEL[@]}"; do C_CG[i]=$DEMO_CG/pod${C_UID[$i]}/${C_CID[$i]}; done

write_pod_list() {
  local i sep=
  {
    echo '{"kind": "PodList", "items": ['
    for i in "${!C_LABEL[@]}"; do
      printf '%s{"metadata": {"uid": "%s", "namespace": "demo", "name": "%s", "annotations":
        {"katalyst.kubewharf.io/qos_level": "%s"%s}}, "status": {"qosClass": "%s",
        "containerStatuses": [{"name": "%s", "containerID": "containerd://%s"}]}}\n' \
        "$sep" "${C_UID[$i]}" "${C_POD[$i]}" "${C_QOS[$i]}" "${C_ANN[$i]}" "${C_POD_QOS[$i]}" \
        "${C_CONTAINER[$i]}" "${C_CID[$i]}"
      sep=,
    done
    [[ -n ${POD_LIST_EXTRA:-} ]] && echo ",$POD_LIST_EXTRA"
    echo ']}'
  } >"$WORK/pods.json.new"
  mv "$WORK/pods.json.new" "$WORK/pods.json"  # netqosd re-reads it every few seconds: never half
}

# The demo measures each container's rate on its HTB leaf. Its veths have one TX queue per CPU,
# so on a kernel with sch_fq the default --shaping-mode=auto would pace them in EDT mode instead
# (no leaves): there the demo asks for htb, and says so. (This VM's kernel has no sch_fq.)
SHAPING_MODE=auto
if ip netns add "$TAG-fq" 2>/dev/null; then
  tc -n "$TAG-fq" qdisc add dev lo root fq 2>/dev/null && SHAPING_MODE=htb
  ip netns del "$TAG-fq"
fi

# Only the two demo NICs are NICs for this daemon: every other host link (a PCI eth0 would
# count by default) is denied. Veths report no speed: it is given per NIC.
start_daemon() {
  local deny='' link
  for link in /sys/class/net/*; do
    [[ ${link##*/} == "$NIC_A" ]] || deny+=${deny:+,}${link##*/}
  done
  # What the tenants of namespace demo may ask for beyond what is stricter: borrowing, and DSCP EF.
  echo '{"version": 1, "namespaces": {"demo": {"borrow": true, "dscp": ["EF"]}}}' \
    >"$WORK/tenant-policy.json"
  # A session of its own: Ctrl-C in the terminal interrupts the demo, whose cleanup then stops the
  # daemon, rather than stopping the daemon under a command that is still talking to it.
  setsid "$NETQOSD" --machine-net-multi-ns --machine-net-ns-dir="$NS_DIR" \
    --nic-allow="$NIC_A,$NIC_B" --nic-deny="$deny" \
    --nic-speed-override="$NIC_A=1000" --nic-speed-override="$NIC_B=500" \
    --network-resource-plugin-reserved-bandwidth=100 \
    --network-resource-plugin-class-id-shared-cores=20 \
    --network-resource-plugin-class-id-reclaimed-cores=10 \
    --network-resource-plugin-class-id-dedicated-cores=30 \
    --enforce-nics="$NIC_A,$NS_B/$NIC_B" --shaping-mode="$SHAPING_MODE" \
    --qos-level-dscp=dedicated_cores=AF41,reclaimed_cores=CS1 \
    --tenant-policy-file="$WORK/tenant-policy.json" \
    --pod-source=kubelet \
    --kubelet-pods-url="file://$WORK/pods.json" --addition-cgroup-paths="/$CG_ROOT_NAME" \
    --bpf-pin-dir="$PIN_DIR" --qrm-socket-dirs="$SOCK_DIR" --qrm-state-dir="$STATE_DIR" \
    --enforcement-resync-period=5 ${DAEMON_FLAGS[@]+"${DAEMON_FLAGS[@]}"} >>"$LOG" 2>&1 &
  DAEMON_PID=$!
  for _ in $(seq 100); do
    ctl plugin-info >/dev/null 2>&1 && return 0
    kill -0 "$DAEMON_PID" 2>/dev/null || break
    sleep 0.1
  done
  fail "netqosd did not start (its log follows)"
}

# Container i's request, as the kubelet sends it.
request() {
  REQ=(--pod-uid "${C_UID[$1]}" --pod-namespace demo --pod-name "${C_POD[$1]}"
    --container "${C_CONTAINER[$1]}" --qos "${C_QOS[$1]}" --mbps "${C_MBPS[$1]}"
    --annotation "$ENH=${C_ENH[$1]}")
}
# The value of an allocation annotation in `netqosctl allocate`'s table ("" prints as "").
annotation() { awk -v k="qrm.katalyst.kubewharf.io/$1" '$1 == k { print ($2 == "\"\"") ? "" : $2 }'; }

# Allocates container i the way the kubelet does: hints, then Allocate with the hint it merged
# (db is restricted to its NUMA hint). Records the NIC and namespace the allocation names; prints
# the whole response for the first container on NIC B, a summary for the others.
allocate() {
  local i=$1 hint=() out nic netns_path nodes
  request "$i"
  if [[ ${C_QOS[$i]} == dedicated_cores ]]; then
    show ctl hints "${REQ[@]}"
    out=$(ctl hints "${REQ[@]}")
    echo "$out"
    nodes=$(awk '$2 == "true" { print $1; exit }' <<<"$out")  # the first preferred hint
    [[ -n $nodes ]] || fail "no preferred hint for ${C_LABEL[$i]}"
    hint=(--hint "$nodes" --preferred)
  fi
  show ctl allocate "${REQ[@]}" "${hint[@]}"
  out=$(ctl allocate "${REQ[@]}" "${hint[@]}")
  nic=$(annotation nic_name <<<"$out")
  netns_path=$(annotation netns_path <<<"$out")
  [[ -n $nic ]] || fail "Allocate for ${C_LABEL[$i]} named no NIC: $out"
  C_NIC[i]=$nic
  C_NETNS_PATH[i]=$netns_path
  C_NETNS[i]=${netns_path:+$(basename "$netns_path")}
  if [[ -z $netns_path ]]; then C_REMOTE[i]=$REMOTE_A; else C_REMOTE[i]=$REMOTE_B; fi
  if ((i == 2)); then
    echo "$out"
  else
    echo "   -> ${C_MBPS[$i]} Mbps on $nic${netns_path:+ (netns_path $netns_path)}," \
      "netcls_id $(annotation netcls_id <<<"$out")"
  fi
}

# Allocates every container with a bandwidth request and checks where the policy put each:
# host_ns containers on NIC A, anti_host_ns ones on NIC B in its namespace.
allocate_all() {
  local i
  for i in "${!C_LABEL[@]}"; do ((C_MBPS[i] > 0)) && allocate "$i"; done
  # video has no allocation: its annotations cap it on every enforced NIC; it sends over NIC A.
  C_NIC[4]=$NIC_A C_NETNS[4]='' C_NETNS_PATH[4]='' C_REMOTE[4]=$REMOTE_A
  [[ ${C_NIC[0]} == "$NIC_A" && ${C_NIC[1]} == "$NIC_A" && -z ${C_NETNS[0]}${C_NETNS[1]} ]] ||
    fail "host_ns containers were not given NIC A: ${C_NIC[*]}"
  [[ ${C_NIC[2]} == "$NIC_B" && ${C_NIC[3]} == "$NIC_B" && ${C_NETNS[2]} == "$NS_B" &&
    ${C_NETNS[3]} == "$NS_B" ]] ||
    fail "anti_host_ns containers were not given NIC B in $NS_B: ${C_NIC[*]} ${C_NETNS[*]}"
}

# Every allocated container still holds its allocation: one entry each, with its pod uid.
check_allocations() {
  local json n i want=0
  json=$(ctl --json allocations)
  n=$(grep -c '"pod_uid"' <<<"$json" || true)
  for i in "${!C_LABEL[@]}"; do
    ((C_MBPS[i] > 0)) || continue
    ((++want))
    [[ $json == *"\"${C_UID[$i]}\""* ]] || fail "$1: ${C_LABEL[$i]} lost its allocation"
  done
  ((n == want)) || fail "$1: $n allocations held, expected $want"
}

# The runtime starts the containers: their cgroups appear, and netqosd classifies each (its
# class map entry names its leaf: C_PRIO, C_LEAF).
start_containers() {
  local ready i
  for i in "${!C_LABEL[@]}"; do mkdir -p "${C_CG[$i]}"; done
  for _ in $(seq 100); do
    ready=1
    for i in "${!C_LABEL[@]}"; do [[ -n $(priority_of "${C_CG[$i]}") ]] || ready=0; done
    ((ready)) && break
    sleep 0.1
  done
  ((ready)) || fail "the class map did not get every container"
  for i in "${!C_LABEL[@]}"; do
    C_PRIO[i]=$(priority_of "${C_CG[$i]}")
    C_LEAF[i]=$(leaf_of_priority "${C_PRIO[$i]}")
  done
}

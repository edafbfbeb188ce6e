#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# hack/cluster.sh up|down|smoke|images: a Kubernetes cluster on one machine, in
# network namespaces of its own, whose two nodes run kubeletkit (or upstream
# kubelet): the base of the cluster [Conformance] suite (issue 37).
#
#   bash hack/containerd-setup.sh && bash hack/controlplane-setup.sh
#   KK_CLUSTER_KUBELETS="minikubelet minikubelet" bash hack/cluster.sh up
#   # or "upstream upstream", "vknode vknode", "minikubelet vknode", ...
#   bash hack/cluster.sh smoke
#   bash hack/cluster.sh down
#
# Network: a namespace kkc-<id>-cp holds a bridge (10.123.0.1/24) and the
# control plane (etcd; kube-apiserver on 10.123.0.1, the kubernetes
# Service's endpoint; kube-controller-manager; kube-scheduler:
# hack/controlplane-start.sh with KK_CP_CLUSTER=1 and KK_CP_ADDRESS). Each
# node N (1, 2) has a namespace kkc-<id>-nN joined to that bridge by a veth
# (10.123.0.1N), its pods on 10.124.N.0/24 behind a CNI bridge of its own,
# and routes through the control plane's namespace to the other node's
# pods. Nothing is routed to or from the host's namespace: the traffic
# stays in these namespaces. <id> is KK_CLUSTER_ID (default kk).
#
# Each node: its own containerd (hack/containerd-start.sh, KK_WORK
# $KK_WORK/cluster/nN, entered into the node's network namespace only, so
# that mounts propagate as on a host), the kubelet named in
# KK_CLUSTER_KUBELETS (minikubelet, upstream, or vknode:
# examples/vknode, virtual-kubelet's node library with
# examples/vkprovider, docs/cluster.md says what it lacks) joined as
# `kubeadm join` joins it (a bootstrap token, hack/join.sh's kubeadm
# objects, a client certificate for system:node:kkc-nN and a serving one
# by CSR signed with the cluster's CA), in a private mount namespace
# (kk_isolate), node name kkc-nN; and kube-proxy
# (iptables mode, --masquerade-all: without br_netfilter, which is the
# host's, a pod's reply to a Service's client on the same bridge would skip
# conntrack).
#
# Cgroups (KK_CLUSTER_CGROUPS): qos (the default) gives an upstream or
# minikubelet node pod and QoS cgroups, node allocatable enforced on its
# kubepods, under a cgroup root of its own (/kkc-<id>-nN in every
# hierarchy, made before the kubelet starts, removed by `down`), as a
# kubeadm node has them under /: without pod cgroups upstream kubelet
# v1.36.3 panics on every sync of a pod resized in place and is restarted
# by its supervisor again and again, a baseline that is not upstream's.
# none runs both without pod cgroups (cgroupsPerQOS false), as before.
# vknode nodes have no cgroup root flag and run without. The runtime is
# Debian's containerd 1.6, or the 2.x that KK_CONTAINERD_VERSION names
# (built by hack/containerd-setup.sh with it), which mounts image volumes.
#
# State (PIDs, namespaces, kubeconfigs) is under $KK_WORK/cluster; `down`
# stops what `up` started, by PID, and removes the namespaces and links.
# `smoke` checks: both nodes Ready, a pod on each (scheduled by
# kube-scheduler), pod to pod across the nodes, a ClusterIP Service from
# each node's pod, the Service's name through CoreDNS from each, logs and
# exec through the API server. CoreDNS (KK_COREDNS_VERSION, v1.14.2) is
# built from its Go module, cached beside the Kubernetes binaries, and runs
# as kubeadm deploys it (kube-dns on 10.96.0.10), without forwarding. Needs
# root.
set -euo pipefail
HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "${HACK_DIR}/lib.sh"

CDIR="${KK_WORK}/cluster"
ID="${KK_CLUSTER_ID:-kk}"
CP_NS="kkc-${ID}-cp"
CP_ADDR=10.123.0.1
KUBELETS="${KK_CLUSTER_KUBELETS:-minikubelet minikubelet}"
CGROUPS="${KK_CLUSTER_CGROUPS:-qos}"
[[ "${CGROUPS}" == qos || "${CGROUPS}" == none ]] || kk_die "KK_CLUSTER_CGROUPS=${CGROUPS}: qos or none"
CP_WORK="${CDIR}/cp"
KUBE_PROXY_BIN="${KK_APISERVER_CACHE}/kube-proxy-${KK_K8S_VERSION}"
COREDNS_VERSION="${KK_COREDNS_VERSION:-v1.14.2}"
COREDNS_BIN="${KK_APISERVER_CACHE}/coredns-${COREDNS_VERSION}"
COREDNS_IMAGE="docker.io/local/coredns:${COREDNS_VERSION}"

[[ "$(id -u)" == 0 ]] || kk_die "needs root (namespaces, containers)"
# With containerd 2.x, its own ctr imports the images.
[[ -z "${KK_CONTAINERD_VERSION}" ]] || PATH="${KK_CONTAINERD_BIN_DIR}:${PATH}"

# in_ns NS CMD...: CMD in the network namespace NS only (its mount
# namespace stays the caller's, unlike `ip netns exec`, so that mounts under
# the shared work dir reach the node's containerd).
in_ns() {
  local ns="$1"
  shift
  nsenter --net="/run/netns/${ns}" -- "$@"
}

node_ns() { printf 'kkc-%s-n%s\n' "${ID}" "$1"; }
node_name() { printf 'kkc-n%s\n' "$1"; }
node_ip() { printf '10.123.0.1%s\n' "$1"; }
node_cgroup_root() { printf '/kkc-%s-n%s\n' "${ID}" "$1"; }

kubectl() { in_ns "${CP_NS}" "${KK_KUBECTL_BIN}" --kubeconfig "${CP_WORK}/controlplane/kubeconfig" "$@"; }

# ---- network -----------------------------------------------------------------

net_up() {
  ip netns add "${CP_NS}"
  in_ns "${CP_NS}" ip link set lo up
  in_ns "${CP_NS}" ip link add kkbr0 type bridge
  in_ns "${CP_NS}" ip addr add "${CP_ADDR}/24" dev kkbr0
  in_ns "${CP_NS}" ip link set kkbr0 up
  in_ns "${CP_NS}" sysctl -qw net.ipv4.ip_forward=1
  local n ns
  for n in 1 2; do
    ns="$(node_ns "${n}")"
    ip netns add "${ns}"
    in_ns "${ns}" ip link set lo up
    # The veth is made in the node's namespace and its peer moved to the
    # control plane's: no link ever appears in the host's.
    in_ns "${ns}" ip link add eth0 type veth peer name "veth-n${n}"
    in_ns "${ns}" ip link set "veth-n${n}" netns "${CP_NS}"
    in_ns "${CP_NS}" ip link set "veth-n${n}" master kkbr0 up
    in_ns "${ns}" ip addr add "$(node_ip "${n}")/24" dev eth0
    in_ns "${ns}" ip link set eth0 up
    in_ns "${ns}" ip route add default via "${CP_ADDR}"
    in_ns "${ns}" sysctl -qw net.ipv4.ip_forward=1
    in_ns "${CP_NS}" ip route add "10.124.${n}.0/24" via "$(node_ip "${n}")"
  done
}

net_down() {
  local ns
  for ns in "${CP_NS}" "$(node_ns 1)" "$(node_ns 2)"; do
    [[ -e "/run/netns/${ns}" ]] && ip netns delete "${ns}"
  done
  return 0
}

# ---- nodes ---------------------------------------------------------------------

# start_node N KUBELET: the node's containerd, kubelet and kube-proxy.
start_node() {
  local n="$1" kubelet="$2" ns name dir
  ns="$(node_ns "${n}")"
  name="$(node_name "${n}")"
  dir="${CDIR}/n${n}"
  mkdir -p "${dir}/bin" "${dir}/manifests" "${dir}/pod-logs"
  # The images and crictl of the host's containerd setup (hack/README.md,
  # KK_CNI_BRIDGE_NAME: a second containerd links them in).
  ln -sfn "${KK_IMAGES}" "${dir}/images"
  ln -sf "${KK_BIN}/crictl" "${dir}/bin/crictl"
  KK_WORK="${dir}" KK_CNI_SUBNET="10.124.${n}.0/24" KK_CNI_BRIDGE_NAME=kkcni0 KK_CNI_DEFAULT_ROUTE=1 \
    in_ns "${ns}" bash "${HACK_DIR}/containerd-start.sh" >"${dir}/containerd-start.log" 2>&1 ||
    { tail -n 20 "${dir}/containerd-start.log"; kk_die "node ${n}: containerd did not start"; }

  # The web server image the smoke test serves and CoreDNS's (busybox and
  # pause are imported by containerd-start.sh).
  ctr --address "${dir}/run/containerd.sock" --namespace k8s.io images import \
    --base-name "${KK_WEBSERVER_IMAGE%:*}" "${KK_IMAGES}/webserver.oci.tar" >/dev/null
  ctr --address "${dir}/run/containerd.sock" --namespace k8s.io images import \
    --base-name "${COREDNS_IMAGE%:*}" "${CDIR}/coredns.oci.tar" >/dev/null
  local token endpoint="unix://${dir}/run/containerd.sock"
  token="$(kk_kubeadm_token)"
  kk_kubeadm_token_secret "${token}" "$(date -u -d '+1 day' +%Y-%m-%dT%H:%M:%SZ)" | kubectl apply -f - >/dev/null
  kk_kubeadm_bootstrap_kubeconfig "${dir}/bootstrap-kubelet.conf" "${KK_APISERVER_URL}" "${KK_APISERVER_CA}" "${token}"
  # Pod and QoS cgroups under a cgroup root of the node's own (see
  # KK_CLUSTER_CGROUPS above).
  local cgroup_root=""
  if [[ "${CGROUPS}" == qos && "${kubelet}" != vknode ]]; then
    cgroup_root="$(node_cgroup_root "${n}")"
    kk_make_cgroup_root "${cgroup_root}"
  fi
  KK_KUBELET_CGROUP_ROOT="${cgroup_root}" kk_kubeadm_kubelet_config "${KK_CLIENT_CA_FILE}" "${endpoint}" \
    "${dir}/pod-logs" "${dir}/manifests" 10250 10248 "serverTLSBootstrap: true" >"${dir}/config.yaml"
  local cmd=(--config="${dir}/config.yaml" --bootstrap-kubeconfig="${dir}/bootstrap-kubelet.conf"
    --kubeconfig="${dir}/kubelet.conf" --root-dir="${dir}/root" --cert-dir="${dir}/pki"
    --hostname-override="${name}" --node-ip="$(node_ip "${n}")")
  case "${kubelet}" in
  minikubelet) cmd=("${CDIR}/bin/minikubelet" "${cmd[@]}" -v) ;;
  upstream) cmd=("${KK_KUBELET_BIN}" "${cmd[@]}" --v=2) ;;
  vknode)
    # virtual-kubelet's node takes flags, not the kubelet configuration:
    # the same bootstrap token, cert dir and serving CSR, the kubelet API
    # on 10250 with the cluster's client CA, the cluster DNS. (Its
    # healthz, read-only port and static pods: it has none.)
    cmd=("${CDIR}/bin/vknode" --bootstrap-kubeconfig="${dir}/bootstrap-kubelet.conf"
      --kubeconfig="${dir}/kubelet.conf" --cert-dir="${dir}/pki" --rotate-server-certificates
      --root-dir="${dir}/root" --pod-logs-dir="${dir}/pod-logs" --node-name="${name}" --node-ip="$(node_ip "${n}")"
      --container-runtime-endpoint="${endpoint}" --port=10250 --client-ca-file="${KK_CLIENT_CA_FILE}"
      --cluster-dns=10.96.0.10 --cluster-domain=cluster.local --eviction-hard="${KK_EVICTION_HARD}" -v)
    ;;
  *) kk_die "unknown kubelet ${kubelet} (minikubelet, upstream or vknode)" ;;
  esac
  kk_isolate "${dir}/var-lib-kubelet" "${cmd[@]}"
  # Supervised as kubeadm's kubelet.service supervises a kubelet
  # (Restart=always, RestartSec=10): a kubelet that exits or panics is
  # started again after 10 seconds, with a "kk-supervise:" line in its log.
  # The supervisor leads a session of its own (setsid); on SIGTERM it stops
  # the kubelet and waits for it.
  # shellcheck disable=SC2016 # expanded by the supervisor's bash
  setsid bash -c 'trap '\''[[ -z "${c:-}" ]] || { kill -TERM "${c}"; wait "${c}"; } 2>/dev/null; exit 0'\'' TERM INT
    while :; do
      "$@" &
      c=$!
      wait "${c}"
      rc=$?
      echo "kk-supervise: $(date -u +%H:%M:%S) the kubelet exited with status ${rc}; starting it again in 10s"
      sleep 10 &
      wait $!
    done' kk-supervise nsenter --net="/run/netns/${ns}" -- "${KK_ISOLATED_CMD[@]}" >"${dir}/kubelet.log" 2>&1 </dev/null &
  echo $! >"${dir}/kubelet.pid"
  printf '%s\n' "${cmd[0]}" >"${dir}/kubelet.bin"

  # kube-proxy with the admin's credentials (kubeadm gives it a
  # ServiceAccount; the rights are the same for what it reads).
  setsid nsenter --net="/run/netns/${ns}" -- "${KUBE_PROXY_BIN}" --kubeconfig="${CP_WORK}/controlplane/kubeconfig" \
    --hostname-override="${name}" --cluster-cidr=10.124.0.0/16 --proxy-mode=iptables --masquerade-all \
    --conntrack-max-per-core=0 --conntrack-tcp-timeout-established=0 --conntrack-tcp-timeout-close-wait=0 \
    --metrics-bind-address=127.0.0.1:10249 --healthz-bind-address=127.0.0.1:10256 --v=2 \
    >"${dir}/kube-proxy.log" 2>&1 </dev/null &
  echo $! >"${dir}/kube-proxy.pid"
}

# build_coredns: CoreDNS from its Go module (go install at
# COREDNS_VERSION, outside any workspace), cached per version like the
# Kubernetes binaries, and its image: the static binary alone.
build_coredns() {
  if [[ ! -x "${COREDNS_BIN}" || "${KK_REBUILD:-0}" == 1 ]]; then
    kk_go_install "github.com/coredns/coredns@${COREDNS_VERSION}" "${COREDNS_BIN}"
  fi
  local root="${CDIR}/coredns-rootfs"
  rm -rf "${root}"
  mkdir -p "${root}/etc/coredns"
  install -m 0755 "${COREDNS_BIN}" "${root}/coredns"
  bash "${HACK_DIR}/oci-image.sh" "${CDIR}/coredns.oci.tar" "${COREDNS_IMAGE}" \
    '{"Entrypoint":["/coredns"],"Cmd":["-conf","/etc/coredns/Corefile"],"WorkingDir":"/"}' "${root}"
}

# deploy_coredns: CoreDNS as kubeadm deploys it (a ServiceAccount and its
# ClusterRole, the Corefile, two replicas, the kube-dns Service on
# 10.96.0.10), without forwarding: names outside the cluster get no answer
# and no traffic leaves the machine.
deploy_coredns() {
  kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: ServiceAccount
metadata: {name: coredns, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:coredns"}
rules:
- {apiGroups: [""], resources: [endpoints, services, pods, namespaces], verbs: [list, watch]}
- {apiGroups: [discovery.k8s.io], resources: [endpointslices], verbs: [list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:coredns"}
subjects: [{kind: ServiceAccount, name: coredns, namespace: kube-system}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: coredns, namespace: kube-system}
data:
  Corefile: |
    .:53 {
        errors
        health {
           lameduck 5s
        }
        ready
        kubernetes cluster.local in-addr.arpa ip6.arpa {
           pods insecure
           fallthrough in-addr.arpa ip6.arpa
           ttl 30
        }
        prometheus :9153
        cache 30
        loop
        reload
        loadbalance
    }
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: coredns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  replicas: 2
  selector: {matchLabels: {k8s-app: kube-dns}}
  template:
    metadata: {labels: {k8s-app: kube-dns}}
    spec:
      serviceAccountName: coredns
      priorityClassName: system-cluster-critical
      dnsPolicy: Default
      containers:
      - name: coredns
        image: ${COREDNS_IMAGE}
        imagePullPolicy: IfNotPresent
        args: ["-conf", "/etc/coredns/Corefile"]
        ports:
        - {name: dns, containerPort: 53, protocol: UDP}
        - {name: dns-tcp, containerPort: 53, protocol: TCP}
        - {name: metrics, containerPort: 9153, protocol: TCP}
        volumeMounts: [{name: config-volume, mountPath: /etc/coredns, readOnly: true}]
        livenessProbe: {httpGet: {path: /health, port: 8080}, initialDelaySeconds: 60, timeoutSeconds: 5}
        readinessProbe: {httpGet: {path: /ready, port: 8181}}
      volumes:
      - name: config-volume
        configMap: {name: coredns, items: [{key: Corefile, path: Corefile}]}
---
apiVersion: v1
kind: Service
metadata: {name: kube-dns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  selector: {k8s-app: kube-dns}
  clusterIP: 10.96.0.10
  ports:
  - {name: dns, port: 53, protocol: UDP}
  - {name: dns-tcp, port: 53, protocol: TCP}
  - {name: metrics, port: 9153, protocol: TCP}
EOF
  kubectl -n kube-system rollout status deployment/coredns --timeout=120s ||
    kk_die "CoreDNS did not become ready"
}

# approve_serving: approve the nodes' serving CSRs, as join.sh's approver.
approve_serving() { kk_approve_serving_csrs >/dev/null; }

stop_pidfile() {
  local file="$1" bin="$2" pid
  [[ -f "${file}" ]] || return 0
  pid="$(tr -dc '0-9' <"${file}")"
  if [[ -n "${pid}" ]] && kk_pid_alive "${pid}"; then
    local cmd
    cmd="$(kk_cmdline "${pid}")"
    # Only ours: nsenter or the binary, with our paths.
    if [[ "${cmd}" == *"${bin}"* ]]; then
      kk_stop_pid "$(basename "${file}" .pid)" "${pid}" 20 || true
    fi
  fi
  rm -f "${file}"
}

up() {
  [[ ! -e "/run/netns/${CP_NS}" ]] || kk_die "a cluster ${ID} exists: hack/cluster.sh down first"
  [[ -x "${KUBE_PROXY_BIN}" ]] || kk_build_upstream kube-proxy "${KUBE_PROXY_BIN}"
  rm -rf "${CDIR}"
  mkdir -p "${CDIR}/bin"
  kk_share_dir "${CDIR}"
  (cd "${HACK_DIR}/.." && go build -o "${CDIR}/bin/minikubelet" ./examples/minikubelet)
  [[ " ${KUBELETS} " != *" vknode "* ]] || (cd "${HACK_DIR}/.." && go build -o "${CDIR}/bin/vknode" ./examples/vknode)
  build_coredns
  [[ " ${KUBELETS} " != *" upstream "* ]] || kk_build_upstream kubelet "${KK_KUBELET_BIN}"
  net_up
  kk_log "network up: ${CP_NS} and two nodes"
  KK_WORK="${CP_WORK}" KK_CP_CLUSTER=1 KK_CP_ADDRESS="${CP_ADDR}" \
    in_ns "${CP_NS}" bash "${HACK_DIR}/controlplane-start.sh" >"${CDIR}/controlplane-start.log" 2>&1 ||
    { tail -n 30 "${CDIR}/controlplane-start.log"; kk_die "control plane did not start"; }
  # shellcheck disable=SC1091
  source "${CP_WORK}/controlplane/env"
  kk_kubeadm_cluster_objects | kubectl apply -f - >/dev/null
  local n=1 kubelet
  for kubelet in ${KUBELETS}; do
    ((n <= 2)) || break
    start_node "${n}" "${kubelet}"
    kk_log "node $(node_name "${n}"): ${kubelet} started"
    n=$((n + 1))
  done
  local i
  for i in $(seq 240); do
    approve_serving
    [[ "$(kubectl get nodes -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' 2>/dev/null | grep -c True)" == 2 ]] && break
    sleep 0.5
  done
  # Ready is not serving: a node's kubelet API answers once its serving
  # CSR is approved and issued, which can come after it turned Ready.
  local served=0
  for i in $(seq 120); do
    approve_serving
    served=0
    for n in 1 2; do [[ -s "${CDIR}/n${n}/pki/kubelet-server-current.pem" ]] && served=$((served + 1)); done
    ((served == 2)) && break
    sleep 0.5
  done
  ((served == 2)) || kk_die "the nodes' serving certificates were not issued within 60s; logs in ${CDIR}/n*/"
  kubectl get nodes -o wide
  for n in 1 2; do
    kk_pid_alive "$(cat "${CDIR}/n${n}/kube-proxy.pid")" ||
      { tail -n 5 "${CDIR}/n${n}/kube-proxy.log"; kk_die "node ${n}: kube-proxy exited; see ${CDIR}/n${n}/kube-proxy.log"; }
  done
  [[ "$(kubectl get nodes -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -c True)" == 2 ]] ||
    kk_die "the two nodes are not Ready after 120s; logs in ${CDIR}/n*/"
  deploy_coredns
  kk_log "cluster up: kubectl: nsenter --net=/run/netns/${CP_NS} ${KK_KUBECTL_BIN} --kubeconfig ${CP_WORK}/controlplane/kubeconfig"
}

down() {
  local n
  for n in 1 2; do
    local dir="${CDIR}/n${n}"
    stop_pidfile "${dir}/kube-proxy.pid" "${KUBE_PROXY_BIN}"
    if [[ -e "/run/netns/$(node_ns "${n}")" && -d "${dir}/conformance" ]]; then
      KK_WORK="${dir}" in_ns "$(node_ns "${n}")" bash "${HACK_DIR}/conformance-images.sh" registry-stop >/dev/null 2>&1 || true
    fi
    if [[ -f "${dir}/kubelet.bin" && -f "${dir}/kubelet.pid" ]]; then
      local sup
      sup="$(tr -dc '0-9' <"${dir}/kubelet.pid")"
      stop_pidfile "${dir}/kubelet.pid" "$(cat "${dir}/kubelet.bin")"
      # The supervisor's session, in case it was killed before its kubelet
      # (only our processes are in it).
      [[ -z "${sup}" ]] || kill -KILL -- "-${sup}" 2>/dev/null || true
    fi
    if [[ -e "/run/netns/$(node_ns "${n}")" && -d "${dir}" ]]; then
      KK_WORK="${dir}" KK_CNI_BRIDGE_NAME=kkcni0 in_ns "$(node_ns "${n}")" bash "${HACK_DIR}/containerd-stop.sh" \
        >"${dir}/containerd-stop.log" 2>&1 || kk_log "node ${n}: containerd-stop failed; see ${dir}/containerd-stop.log"
    fi
    kk_remove_cgroup_root "$(node_cgroup_root "${n}")" || true
  done
  if [[ -e "/run/netns/${CP_NS}" ]]; then
    KK_WORK="${CP_WORK}" in_ns "${CP_NS}" bash "${HACK_DIR}/controlplane-stop.sh" >"${CDIR}/controlplane-stop.log" 2>&1 || true
  fi
  net_down
  kk_unmount_under "${CDIR}"
  kk_log "cluster ${ID} down"
}

# images: the conformance images (hack/conformance-images.sh build, for
# $KK_WORK) in every node's containerd, and a registry of them in each node's
# network namespace on 127.0.0.1:5055, the name KUBE_TEST_REPO_LIST gives
# them, for the specs that pull.
images() {
  local n dir ns
  [[ -d "${KK_WORK}/conformance/images" ]] || kk_die "no conformance images: run hack/conformance-images.sh build"
  for n in 1 2; do
    dir="${CDIR}/n${n}"
    ns="$(node_ns "${n}")"
    mkdir -p "${dir}/conformance"
    ln -sfn "${KK_WORK}/conformance/images" "${dir}/conformance/images"
    KK_WORK="${dir}" bash "${HACK_DIR}/conformance-images.sh" import >"${dir}/images-import.log" 2>&1 ||
      { tail -n 5 "${dir}/images-import.log"; kk_die "node ${n}: import failed"; }
    KK_WORK="${dir}" in_ns "${ns}" bash "${HACK_DIR}/conformance-images.sh" registry-start >"${dir}/registry-start.log" 2>&1 ||
      { tail -n 5 "${dir}/registry-start.log"; kk_die "node ${n}: registry failed"; }
    kk_log "node $(node_name "${n}"): conformance images imported and served on its 127.0.0.1:5055"
  done
}

smoke() {
  # shellcheck disable=SC1091
  source "${CP_WORK}/controlplane/env"
  local failed=0
  kubectl apply -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}
      terminationGracePeriodSeconds: 1
      containers:
      - name: web
        image: ${KK_WEBSERVER_IMAGE}
        ports: [{containerPort: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 80}]
EOF
  kubectl rollout status deployment/web --timeout=120s || failed=1
  kubectl get pods -o wide
  local pods ips svc p ip
  pods="$(kubectl get pods -l app=web -o jsonpath='{range .items[*]}{.metadata.name}{" "}{end}')"
  ips="$(kubectl get pods -l app=web -o jsonpath='{range .items[*]}{.status.podIP}{" "}{end}')"
  [[ "$(kubectl get pods -l app=web -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u | wc -l)" == 2 ]] ||
    { kk_log "FAIL: the two pods are not on two nodes"; failed=1; }
  svc="$(kubectl get svc web -o jsonpath='{.spec.clusterIP}')"
  kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: client-1, namespace: default}
spec: {nodeName: kkc-n1, terminationGracePeriodSeconds: 1, containers: [{name: c, image: ${KK_BUSYBOX_IMAGE}, command: [sleep, "3600"]}]}
---
apiVersion: v1
kind: Pod
metadata: {name: client-2, namespace: default}
spec: {nodeName: kkc-n2, terminationGracePeriodSeconds: 1, containers: [{name: c, image: ${KK_BUSYBOX_IMAGE}, command: [sleep, "3600"]}]}
EOF
  kubectl wait --for=condition=Ready pod/client-1 pod/client-2 --timeout=60s || failed=1
  for p in client-1 client-2; do
    for ip in ${ips} "${svc}"; do
      # busybox's nc, not its wget (static, it crashes resolving here).
      if kubectl exec "${p}" -- sh -c "printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 5 ${ip} 80 | head -1 | grep -q ' 200 '"; then
        kk_log "ok   ${p} -> ${ip}"
      else
        kk_log "FAIL ${p} -> ${ip}"
        failed=1
      fi
    done
  done
  for p in client-1 client-2; do
    if kubectl exec "${p}" -- nslookup web.default.svc.cluster.local >"${CDIR}/nslookup-${p}.txt" 2>&1 &&
      grep -q "${svc}" "${CDIR}/nslookup-${p}.txt"; then
      kk_log "ok   ${p}: web.default.svc.cluster.local is ${svc} (CoreDNS)"
    else
      kk_log "FAIL ${p}: nslookup web.default.svc.cluster.local: $(tr '\n' ' ' <"${CDIR}/nslookup-${p}.txt")"
      failed=1
    fi
  done
  for p in ${pods}; do
    kubectl logs "${p}" >/dev/null || { kk_log "FAIL logs ${p}"; failed=1; }
  done
  kubectl delete pod client-1 client-2 --wait=false >/dev/null
  kubectl delete deployment web >/dev/null
  kubectl delete service web >/dev/null
  return "${failed}"
}

case "${1:-}" in
up) up ;;
down) down ;;
smoke) smoke ;;
images) images ;;
*) kk_die "usage: hack/cluster.sh up|down|smoke|images" ;;
esac

#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# hack/conformance.sh: run upstream's node conformance suite
# (k8s.io/kubernetes/test/e2e_node, the [NodeConformance] specs) against
# minikubelet, or against upstream kubelet, on a private containerd.
#
#   bash hack/conformance.sh [--kubelet minikubelet|upstream] [--focus RE]
#                            [--skip RE] [--pass-list FILE] [--timeout DUR]
#
#   --kubelet    which kubelet joins the suite's control plane (default
#                minikubelet)
#   --focus      ginkgo focus (default '\[NodeConformance\]')
#   --skip       ginkgo skip (default: Serial, Disruptive, Flaky, Slow, every
#                [Feature:...] and the [FeatureGate:...] specs of gates that
#                are off by default; the SidecarContainers specs stay, the
#                gate is GA)
#   --pass-list  a recorded pass list (hack/conformance/*.passed): the run
#                fails when a spec of it did not pass (a regression); specs
#                that pass and are not in it are reported, not failed
#   --only-pass-list
#                run exactly the specs of --pass-list (its focus replaces
#                --focus): what CI does, so that it waits on no spec known
#                to fail
#   --timeout    the suite's ginkgo timeout (default 3h)
#
# The specs run in KK_CONFORMANCE_PROCS (default 12) parallel ginkgo
# processes, as upstream's node e2e jobs run the specs that are not
# [Serial].
#
# What it does, as a cluster's node e2e job does, but offline and isolated:
#  1. builds, each once per version and cached in $KK_APISERVER_CACHE:
#     e2e_node.test and the ginkgo CLI (from hack/e2enode's module, about 20
#     minutes on 2 cores with a cold Go build cache), upstream kubelet and
#     kubectl
#     (hack/apiserver's module); and minikubelet, and the suite's images
#     (hack/conformance-images.sh);
#  2. enters a new mount and network namespace (unshare), so that the ports
#     the suite hard-codes (kube-apiserver 6443, kubelet 10250 and 10255)
#     and the paths it expects (/var/lib/kubelet, /var/log/pods,
#     /var/log/containers) are the run's own: those paths are bound to
#     directories under $KK_WORK/conformance, and everything mounted in the
#     namespace goes away with it. The node's address is 10.88.77.1 on the
#     pods' bridge (kkcni0, made before containerd so that the kubelets find
#     it), which the pods reach;
#  3. starts containerd there (hack/containerd-start.sh, with its own
#     KK_WORK), imports the images and starts the local registry of the
#     specs that pull;
#  4. starts the suite's own control plane (e2e_node.test
#     --run-services-mode: etcd, kube-apiserver and a namespace controller
#     in one process) and the kubelet, configured as the suite configures
#     the kubelet it starts itself (anonymous requests allowed, AlwaysAllow,
#     read-only port 10255, static pods from a directory, the eviction
#     thresholds of test/e2e_node/jenkins/default-kubelet-config.yaml).
#     The kubelet reads its configuration from $OUT/suite/kubelet-config
#     (a KubeletConfiguration; minikubelet's command line keeps only the
#     flags that are no field) and runs under hack/kubelet-supervisor.sh;
#  5. runs the suite (--start-services=false) with hack/conformance-shims
#     first on its PATH: the specs that change the kubelet's configuration
#     (the [Serial] CPU, topology and memory manager specs and many others)
#     rewrite $OUT/suite/kubelet-config, the suite's working directory, and
#     restart the kubelet with `sudo systemctl list-units|reset-failed|kill|
#     restart`, which the shims' systemctl serves through the supervisor for
#     one unit, kubelet-kkconf.service (no systemd, nothing on the host);
#     then stops what it started, by PID, and writes in
#     $KK_WORK/conformance/<kubelet>/: junit.xml, report.json (ginkgo's),
#     suite.log, kubelet.log (every start's), supervisor.log, services.log,
#     summary.txt (per area), passed.txt and failed.txt (one spec a line;
#     failed.txt with the first line of each failure).
#
# Both kubelets run with pod and QoS cgroups (cgroupsPerQOS, cgroupfs, node
# allocatable enforced on kubepods), as the suite's own kubelet does, under a
# cgroup root of the run's own (/kkconf-<pid>, made in every cgroup
# hierarchy before the kubelet starts and removed after everything
# stopped), so that nothing is made at the host's /kubepods. Without pod
# cgroups upstream kubelet v1.36.3 panics on every sync of a pod resized in
# place (a nil pod memory configuration in doPodResizeAction) and exits: the
# later specs then time out and its node's heartbeat stops, a baseline that
# is not upstream's. KK_CONFORMANCE_CGROUPS=none runs both without pod
# cgroups (cgroupsPerQOS false), as the harness did before. Neither collects images
# (imageGCHighThresholdPercent 100): on a disk more than 85% used, both
# would remove the images the run imported, the sandbox image among them
# where the runtime does not pin it (containerd 1.6), and no pod could
# start again.
#
# Environment: KK_WORK, KK_APISERVER_CACHE, KK_K8S_VERSION (lib.sh);
# KK_CONFORMANCE_NODE (node name, default kk-conformance);
# KK_CONFORMANCE_CGROUPS (qos, the default, or none: above);
# KK_CONFORMANCE_CGROUPNS=1 runs the suite (not the kubelet) in a cgroup
# namespace rooted at the run's cgroup root (hack/cgroupns-exec.sh), so
# that the specs that read the pods' cgroups at /kubepods (CPU manager,
# cgroup manager, pod overhead) find them; off by default. Needs root.
set -euo pipefail
HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "${HACK_DIR}/lib.sh"

KUBELET=minikubelet
FOCUS='\[NodeConformance\]'
SKIP='\[(Serial|Disruptive|Flaky|Slow)\]|\[Feature:[^]]+\]|\[FeatureGate:(HostnameOverride|KubeletPSI|EnvFiles)\]'
PASS_LIST=""
ONLY_PASS_LIST=0
TIMEOUT=3h
while (($#)); do
  case "$1" in
  --kubelet) KUBELET="$2" ;;
  --focus) FOCUS="$2" ;;
  --skip) SKIP="$2" ;;
  --pass-list) PASS_LIST="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")" ;;
  --only-pass-list)
    ONLY_PASS_LIST=1
    shift
    continue
    ;;
  --timeout) TIMEOUT="$2" ;;
  *) kk_die "unknown argument $1 (see the header of $0)" ;;
  esac
  shift 2
done
[[ "${KUBELET}" == minikubelet || "${KUBELET}" == upstream ]] || kk_die "--kubelet must be minikubelet or upstream"
CGROUPS="${KK_CONFORMANCE_CGROUPS:-qos}"
[[ "${CGROUPS}" == qos || "${CGROUPS}" == none ]] || kk_die "KK_CONFORMANCE_CGROUPS must be qos or none"
[[ "$(id -u)" == 0 ]] || kk_die "needs root (containerd, namespaces, mounts)"

CDIR="${KK_WORK}/conformance"
OUT="${CDIR}/${KUBELET}"
NODE="${KK_CONFORMANCE_NODE:-kk-conformance}"
NODE_IP=10.88.77.1
E2E_BIN="${KK_APISERVER_CACHE}/e2e_node.test-${KK_K8S_VERSION}"
GINKGO_BIN="${KK_APISERVER_CACHE}/ginkgo-${KK_K8S_VERSION}"
PROCS="${KK_CONFORMANCE_PROCS:-12}"
E2E_MODULE_DIR="${HACK_DIR}/e2enode"
APISERVER_URL=https://127.0.0.1:6443

# build_e2e: e2e_node.test from hack/e2enode, unless cached.
build_e2e() {
  if [[ -x "${E2E_BIN}" && "${KK_REBUILD:-0}" != 1 ]]; then
    kk_log "e2e_node.test cached: ${E2E_BIN}"
    return 0
  fi
  grep -Eq "^require k8s.io/kubernetes ${KK_K8S_VERSION//./\\.}( |\$)" "${E2E_MODULE_DIR}/go.mod" ||
    grep -Eq "^[[:space:]]k8s.io/kubernetes ${KK_K8S_VERSION//./\\.}( |\$)" "${E2E_MODULE_DIR}/go.mod" ||
    kk_die "KK_K8S_VERSION=${KK_K8S_VERSION} is not what ${E2E_MODULE_DIR}/go.mod requires"
  mkdir -p "$(dirname "${E2E_BIN}")"
  kk_log "building e2e_node.test ${KK_K8S_VERSION} (about 20 minutes on 2 cores with a cold Go build cache)"
  local t0=${SECONDS}
  (
    cd "${E2E_MODULE_DIR}"
    # -vet=off: go test -c would vet the whole suite first.
    GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0 nice -n 10 \
      go test -c -vet=off -trimpath -ldflags "-s -w" -o "${E2E_BIN}.tmp" k8s.io/kubernetes/test/e2e_node
  )
  mv "${E2E_BIN}.tmp" "${E2E_BIN}"
  kk_log "built ${E2E_BIN} in $((SECONDS - t0))s"
}

# build_ginkgo: the ginkgo CLI of the suite's ginkgo version (it runs the
# suite's binary in parallel processes), unless cached.
build_ginkgo() {
  if [[ -x "${GINKGO_BIN}" && "${KK_REBUILD:-0}" != 1 ]]; then
    kk_log "ginkgo cached: ${GINKGO_BIN}"
    return 0
  fi
  mkdir -p "$(dirname "${GINKGO_BIN}")"
  (
    cd "${E2E_MODULE_DIR}"
    GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0 nice -n 10 \
      go build -trimpath -o "${GINKGO_BIN}.tmp" github.com/onsi/ginkgo/v2/ginkgo
  )
  mv "${GINKGO_BIN}.tmp" "${GINKGO_BIN}"
  kk_log "built ${GINKGO_BIN}"
}

# setup runs in the host's namespaces: everything that builds or installs.
setup() {
  bash "${HACK_DIR}/containerd-setup.sh"
  build_e2e
  build_ginkgo
  kk_build_upstream kubelet "${KK_KUBELET_BIN}"
  kk_build_upstream kubectl "${KK_KUBECTL_BIN}"
  mkdir -p "${CDIR}/bin"
  (cd "${HACK_DIR}/.." && go build -o "${CDIR}/bin/minikubelet" ./examples/minikubelet)
  (cd "${HACK_DIR}/.." && go build -o "${CDIR}/bin/conformance" ./hack/conformance)
  bash "${HACK_DIR}/conformance-images.sh" build
  # The mount points of the paths the suite expects; created empty on a
  # host without them, and left there.
  local d
  for d in /var/lib/kubelet /var/log/pods /var/log/containers; do
    [[ -d "${d}" ]] || { mkdir -p "${d}" && kk_log "created ${d} (empty): a mount point of the run's own copy"; }
  done
}

if [[ "${KK_CONFORMANCE_INNER:-}" != 1 ]]; then
  setup
  rm -rf "${OUT}"
  mkdir -p "${OUT}"
  ONLY=()
  if ((ONLY_PASS_LIST)); then
    [[ -n "${PASS_LIST}" ]] || kk_die "--only-pass-list needs --pass-list"
    ONLY=(--only-pass-list)
  fi
  kk_log "entering a private mount and network namespace"
  # The child runs this script again; --propagation private keeps every
  # mount of the run (binds, containerd's snapshots, the kubelet's volumes)
  # in the namespace.
  rc=0
  KK_CONFORMANCE_INNER=1 unshare --mount --net --propagation private -- \
    bash "$0" --kubelet "${KUBELET}" --focus "${FOCUS}" --skip "${SKIP}" --timeout "${TIMEOUT}" \
    ${PASS_LIST:+--pass-list "${PASS_LIST}"} "${ONLY[@]}" || rc=$?
  exit "${rc}"
fi

# ---- inside the namespaces --------------------------------------------------

# containerd gets a KK_WORK of its own (its state and root go away with the
# run) that shares the outer one's built tools and images.
NODE_WORK="${CDIR}/node"
mkdir -p "${NODE_WORK}"
for d in bin images build; do
  [[ -e "${NODE_WORK}/${d}" ]] || ln -s "../../${d}" "${NODE_WORK}/${d}"
done
# conformance-images.sh finds its archives and keeps its registry's files
# in $KK_WORK/conformance: the outer one, which this link is.
[[ -e "${NODE_WORK}/conformance" ]] || ln -s .. "${NODE_WORK}/conformance"

SERVICES_PID=""
SUPERVISOR_PID=""
KUBELET_BIN=""
TOKEN="$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"

# The run's cgroup root (KK_CONFORMANCE_CGROUPS=qos): /kkconf-<pid> in every
# hierarchy (kk_make_cgroup_root).
CGROUP_ROOT=""
make_cgroup_root() {
  CGROUP_ROOT="/kkconf-$$"
  kk_make_cgroup_root "${CGROUP_ROOT}"
}

# remove_cgroup_root removes the run's cgroup tree; a cgroup that still
# holds a task stays, and is named.
remove_cgroup_root() {
  [[ -z "${CGROUP_ROOT}" ]] || kk_remove_cgroup_root "${CGROUP_ROOT}"
}

cleanup() {
  local status=$?
  # The supervisor stops the kubelet it runs; the kubelet is stopped here
  # only if it outlived it.
  if [[ -n "${SUPERVISOR_PID}" ]] && kk_pid_alive "${SUPERVISOR_PID}" &&
    [[ "$(kk_cmdline "${SUPERVISOR_PID}")" == "bash ${HACK_DIR}/kubelet-supervisor.sh "* ]]; then
    kk_stop_pid "kubelet supervisor" "${SUPERVISOR_PID}" 40 || status=1
  fi
  local kubelet_pid
  kubelet_pid="$(cat "${OUT}/supervisor/kubelet.pid" 2>/dev/null || true)"
  if [[ -n "${kubelet_pid}" ]] && kk_runs "${kubelet_pid}" "${KUBELET_BIN}"; then
    kk_stop_pid kubelet "${kubelet_pid}" 20 || status=1
  fi
  KK_WORK="${NODE_WORK}" bash "${HACK_DIR}/conformance-images.sh" registry-stop || status=1
  KK_WORK="${NODE_WORK}" bash "${HACK_DIR}/containerd-stop.sh" || status=1
  if [[ -n "${SERVICES_PID}" ]] && kk_runs "${SERVICES_PID}" "${E2E_BIN}"; then
    kk_stop_pid "e2e services" "${SERVICES_PID}" 20 || status=1
  fi
  remove_cgroup_root || status=1
  exit "${status}"
}
trap cleanup EXIT

ip link set lo up

for d in var-lib-kubelet var-log-pods var-log-containers manifests suite services; do
  mkdir -p "${OUT}/${d}"
done
mount --bind "${OUT}/var-lib-kubelet" /var/lib/kubelet
mount --bind "${OUT}/var-log-pods" /var/log/pods
mount --bind "${OUT}/var-log-containers" /var/log/containers

KK_WORK="${NODE_WORK}" bash "${HACK_DIR}/containerd-start.sh" >/dev/null
# shellcheck disable=SC1091
source "${NODE_WORK}/env"
# The pods' bridge, made before containerd's CNI would make it (and after
# containerd-start.sh, which removes a bridge left by a crashed run), so that
# the kubelets find their node IP on it.
ip link add "${KK_CNI_BRIDGE}" type bridge
ip addr add "${NODE_IP}/24" dev "${KK_CNI_BRIDGE}"
ip link set "${KK_CNI_BRIDGE}" up
# kube-apiserver picks the address it advertises from the default route.
ip route add default dev "${KK_CNI_BRIDGE}"
KK_WORK="${NODE_WORK}" bash "${HACK_DIR}/conformance-images.sh" import
# The registry of the specs that pull; agnhost's own fake registry of the
# private-registry specs takes port 5000 of this namespace.
KK_WORK="${NODE_WORK}" bash "${HACK_DIR}/conformance-images.sh" registry-start
# shellcheck disable=SC1091 # KUBE_TEST_REPO_LIST and the registry's address
source "${CDIR}/env"

# The suite's control plane: etcd, kube-apiserver on 127.0.0.1:6443 with a
# token file of one user (the token, in system:masters) and a namespace
# controller, all in one process. It writes its token file in its cwd.
kk_log "starting the suite's control plane (e2e_node.test --run-services-mode)"
(cd "${OUT}/services" && exec setsid "${E2E_BIN}" --run-services-mode --bearer-token="${TOKEN}" \
  --host="${APISERVER_URL}" >"${OUT}/services.log" 2>&1 </dev/null) &
SERVICES_PID=$!
deadline=$((SECONDS + 60))
until [[ "$(curl -ks -H "Authorization: Bearer ${TOKEN}" "${APISERVER_URL}/readyz" 2>/dev/null)" == ok ]]; do
  kk_pid_alive "${SERVICES_PID}" || { tail -30 "${OUT}/services.log"; kk_die "the suite's control plane exited"; }
  ((SECONDS < deadline)) || kk_die "the suite's control plane was not ready within 60s"
  sleep 0.5
done

KUBECONFIG_FILE="${OUT}/kubeconfig"
(
  umask 077
  cat >"${KUBECONFIG_FILE}" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster: {server: "${APISERVER_URL}", insecure-skip-tls-verify: true}
users:
- name: kubelet
  user: {token: "${TOKEN}"}
contexts:
- name: e2e
  context: {cluster: e2e, user: kubelet}
current-context: e2e
EOF
)

# The kubelet, as the suite starts its own (test/e2e_node/services/kubelet.go
# and jenkins/default-kubelet-config.yaml), with pod cgroups under the run's
# own root (see above).
PER_QOS=false
ENFORCE="[]"
if [[ "${CGROUPS}" == qos ]]; then
  make_cgroup_root
  PER_QOS=true
  ENFORCE="[pods]"
fi
# Both read their configuration from ${OUT}/suite/kubelet-config: the suite's
# working directory, where the specs that change the kubelet's configuration
# read and rewrite it (test/e2e_node/kubeletconfig) before they restart the
# kubelet through the supervisor (see below).
KUBELET_CONFIG="${OUT}/suite/kubelet-config"
case "${KUBELET}" in
upstream)
  cat >"${KUBELET_CONFIG}" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: ${OUT}/manifests
fileCheckFrequency: 10s
containerRuntimeEndpoint: ${KK_CRI_ENDPOINT}
address: 0.0.0.0
port: 10250
readOnlyPort: 10255
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
failSwapOn: false
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupsPerQOS: ${PER_QOS}
enforceNodeAllocatable: ${ENFORCE}
cgroupRoot: ${CGROUP_ROOT:-/}
volumeStatsAggPeriod: 10s
serializeImagePulls: false
evictionPressureTransitionPeriod: 30s
evictionHard: {memory.available: 250Mi, nodefs.available: 10%, nodefs.inodesFree: 5%}
evictionMinimumReclaim: {nodefs.available: 5%, nodefs.inodesFree: 5%}
resolvConf: /etc/resolv.conf
imageGCHighThresholdPercent: 100
EOF
  KUBELET_BIN="${KK_KUBELET_BIN}"
  cmd=("${KUBELET_BIN}" --config "${KUBELET_CONFIG}" --kubeconfig "${KUBECONFIG_FILE}"
    --root-dir /var/lib/kubelet --hostname-override "${NODE}" --node-ip "${NODE_IP}" --v 2)
  ;;
minikubelet)
  # What minikubelet's flags set before, as fields (upstream's v1beta1
  # defaults for the rest, which minikubelet's flag defaults are too, but
  # for the webhook authentication it keeps off): the same node. Only the
  # flags that are no field stay on the command line.
  cat >"${KUBELET_CONFIG}" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: ${KK_CRI_ENDPOINT}
staticPodPath: ${OUT}/manifests
podLogsDir: /var/log/pods
address: 0.0.0.0
port: 10250
readOnlyPort: 10255
healthzPort: 10248
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
imageGCHighThresholdPercent: 100
cgroupsPerQOS: ${PER_QOS}
cgroupRoot: ${CGROUP_ROOT:-/}
enforceNodeAllocatable: ${ENFORCE}
evictionHard: {memory.available: 250Mi, nodefs.available: 10%, nodefs.inodesFree: 5%}
evictionMinimumReclaim: {nodefs.available: 5%, nodefs.inodesFree: 5%}
EOF
  KUBELET_BIN="${CDIR}/bin/minikubelet"
  cmd=("${KUBELET_BIN}" --config "${KUBELET_CONFIG}" --kubeconfig "${KUBECONFIG_FILE}"
    --node-name "${NODE}" --node-ip "${NODE_IP}" --root-dir /var/lib/kubelet --container-log-links-dir /var/log/containers)
  ;;
esac
# The kubelet runs under hack/kubelet-supervisor.sh, which stops and
# restarts it when the suite asks systemd to (hack/conformance-shims).
SUPERVISOR_DIR="${OUT}/supervisor"
mkdir -p "${SUPERVISOR_DIR}"
kk_log "starting ${KUBELET} under the supervisor"
setsid bash "${HACK_DIR}/kubelet-supervisor.sh" "${SUPERVISOR_DIR}" "${OUT}/kubelet.log" -- "${cmd[@]}" \
  >"${OUT}/supervisor.log" 2>&1 </dev/null &
SUPERVISOR_PID=$!

kubectl() { "${KK_KUBECTL_BIN}" --kubeconfig "${KUBECONFIG_FILE}" "$@"; }
deadline=$((SECONDS + 120))
until [[ "$(kubectl get node "${NODE}" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" == True ]]; do
  kubelet_pid="$(cat "${SUPERVISOR_DIR}/kubelet.pid" 2>/dev/null || true)"
  [[ -z "${kubelet_pid}" ]] || kk_pid_alive "${kubelet_pid}" || { tail -30 "${OUT}/kubelet.log"; kk_die "${KUBELET} exited"; }
  kk_pid_alive "${SUPERVISOR_PID}" || { cat "${OUT}/supervisor.log"; kk_die "the kubelet's supervisor exited"; }
  ((SECONDS < deadline)) || kk_die "node ${NODE} was not Ready within 120s"
  sleep 1
done
kk_log "node ${NODE} is Ready under ${KUBELET}"

if ((ONLY_PASS_LIST)); then
  FOCUS="$("${CDIR}/bin/conformance" focus "${PASS_LIST}")"
  kk_log "running the $(grep -cv '^#' "${PASS_LIST}") specs of ${PASS_LIST}"
else
  kk_log "running the suite: focus ${FOCUS}, skip ${SKIP}"
fi
suite=0
# In parallel processes, as upstream's node e2e jobs run the specs that
# are not [Serial]; the first process alone runs the suite's set-up. ginkgo
# knows a compiled suite by its name, *.test.
ln -sf "${E2E_BIN}" "${OUT}/suite/e2e_node.test"
# The shims first on the suite's PATH: its sudo and systemctl restart the
# kubelet through the supervisor.
# With KK_CONFORMANCE_CGROUPNS=1 the suite sees the run's cgroup root as
# "/" (hack/cgroupns-exec.sh): its specs that read the pods' cgroups at
# /sys/fs/cgroup/<controller>/kubepods find them.
CGROUPNS=()
if [[ "${KK_CONFORMANCE_CGROUPNS:-0}" == 1 ]]; then
  [[ -n "${CGROUP_ROOT}" ]] || kk_die "KK_CONFORMANCE_CGROUPNS=1 needs pod cgroups (KK_CONFORMANCE_CGROUPS=qos)"
  CGROUPNS=(bash "${HACK_DIR}/cgroupns-exec.sh" "${CGROUP_ROOT}")
  kk_log "the suite runs in a cgroup namespace rooted at ${CGROUP_ROOT}"
fi
(cd "${OUT}/suite" && PATH="${HACK_DIR}/conformance-shims:${PATH}" KK_SUPERVISOR_DIR="${SUPERVISOR_DIR}" \
  "${CGROUPNS[@]}" "${GINKGO_BIN}" run --procs="${PROCS}" --timeout="${TIMEOUT}" \
  --focus="${FOCUS}" --skip="${SKIP}" --no-color -v --output-dir="${OUT}" \
  --junit-report=junit.xml --json-report=report.json ./e2e_node.test -- \
  --start-services=false --node-name="${NODE}" --host="${APISERVER_URL}" --bearer-token="${TOKEN}" \
  --container-runtime-endpoint="${KK_CRI_ENDPOINT}" --prepull-images=false --kubectl-path="${KK_KUBECTL_BIN}" \
  --report-dir="${OUT}" \
  >"${OUT}/suite.log" 2>&1) || suite=$?
kk_log "the suite exited ${suite}"

[[ -s "${OUT}/report.json" ]] || { tail -n 30 "${OUT}/suite.log"; kk_die "the suite wrote no report"; }
check=0
"${CDIR}/bin/conformance" summarize --report "${OUT}/report.json" --out "${OUT}" ${PASS_LIST:+--pass-list "${PASS_LIST}"} || check=$?
cat "${OUT}/summary.txt"
exit "${check}"

#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# hack/fidelity.sh: run the same static pods under upstream kubelet and under
# examples/minikubelet, one after the other on the same containerd, record
# the pod statuses each serves on its read-only /pods endpoint, and compare
# them field by field (hack/fidelity/main.go says which fields).
#
#   bash hack/containerd-setup.sh && bash hack/containerd-start.sh
#   bash hack/fidelity.sh [MANIFEST_DIR [OBJECT_DIR]]
#
# MANIFEST_DIR (default hack/fidelity/manifests) holds the pods; OBJECT_DIR
# (default hack/fidelity/objects) the ConfigMaps and Secrets they use, which
# the API-server phase creates (static pods cannot read them, under either
# agent).
#
# It builds kubelet $KK_K8S_VERSION from hack/apiserver's module (cached in
# $KK_APISERVER_CACHE, like kube-apiserver) and minikubelet, then for each
# agent: removes every pod sandbox from containerd, starts the agent (node
# name kk-node, a fresh root dir under $KK_WORK/fidelity), records for
# $KK_FIDELITY_SECONDS (90) and stops it. Upstream kubelet runs standalone
# with cgroupsPerQOS on (cgroupfs driver, enforceNodeAllocatable pods, no
# kube-reserved), as minikubelet does by default, and failCgroupV1 false
# (no systemd here, and the machine may have cgroup v1). The report is $KK_WORK/fidelity/report.txt;
# the script exits 1 when the last statuses differ. Needs root.
#
# Then (KK_FIDELITY_API=1, the default) the same pods through an API
# server under upstream kubelet and minikubelet, and (KK_FIDELITY_VK=1, the
# default) under virtual-kubelet with our adapter (examples/vknode) on
# containerd and on the fake runtime, each against minikubelet on the same
# backend, with virtual-kubelet's mock provider as the baseline
# (report-vk-mock.txt, never a failure; docs/virtual-kubelet.md). Set
# KK_FIDELITY_STANDALONE=0 to skip the static-pod phase.
#
# Each agent runs in a private mount namespace where /var/lib/kubelet is a
# directory of its own under $KK_WORK/fidelity, and upstream's --cert-dir is
# there too (lib.sh, kk_isolate), so nothing is written to the host's
# /var/lib/kubelet; its ports are picked free at start.
#
# Both kubelets evict on memory alone (memory.available<100Mi, upstream's
# default for it; EVICTION_HARD below): the host's disk is not the run's,
# and a host short of disk would put either node under DiskPressure and
# compare evictions instead of the pods.
set -euo pipefail
HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "${HACK_DIR}/lib.sh"

SECS="${KK_FIDELITY_SECONDS:-90}"
MANIFESTS="$(cd "${1:-${HACK_DIR}/fidelity/manifests}" && pwd)"
OBJECTS="$(cd "${2:-${HACK_DIR}/fidelity/objects}" && pwd)"
DIR="${KK_WORK}/fidelity"
AGENT_PID=""
AGENT_BIN=""
DIFFERS=0
# The only hard eviction threshold of both kubelets (see the header).
EVICTION_HARD="memory.available<100Mi"

[[ -S "${KK_SOCK}" ]] || kk_die "no containerd at ${KK_SOCK}: run hack/containerd-start.sh"
[[ "$(id -u)" == 0 ]] || kk_die "needs root (the agents run containers)"

crictl() { "${KK_BIN}/crictl" --runtime-endpoint "${KK_ENDPOINT}" --image-endpoint "${KK_ENDPOINT}" "$@"; }

# clean: remove every pod sandbox, so an agent starts from an empty node.
clean() {
  crictl rmp -fa >/dev/null 2>&1 || true
  [[ -z "$(crictl pods -q 2>/dev/null)" ]] || kk_die "pods left in containerd after crictl rmp -fa"
}

stop_agent() {
  if [[ -n "${AGENT_PID}" ]] && kk_runs "${AGENT_PID}" "${AGENT_BIN}"; then
    kk_stop_pid agent "${AGENT_PID}" 20 || true
  fi
  AGENT_PID=""
}

# start_agent NAME CMD...: start CMD, isolated (kk_isolate) with its own
# /var/lib/kubelet, its output in NAME.log.
start_agent() {
  local name="$1"
  shift
  kk_log "${name}: starting"
  kk_isolate "${DIR}/${name}-var-lib-kubelet" "$@"
  AGENT_BIN="$1"
  setsid "${KK_ISOLATED_CMD[@]}" >"${DIR}/${name}.log" 2>&1 </dev/null &
  AGENT_PID=$!
}
trap 'stop_agent; clean; kk_unmount_under "${DIR}"' EXIT

# run NAME PORT CMD...: start the agent, record its /pods, stop it.
run() {
  local name="$1" port="$2"
  shift 2
  clean
  # Each agent starts from every manifest: the recording removes those its
  # pods ask to be deleted (fidelity.kubeletkit.io/delete-after).
  rm -f "${DIR}/manifests"/*.yaml
  cp "${MANIFESTS}"/*.yaml "${DIR}/manifests/"
  start_agent "${name}" "$@"
  "${DIR}/fidelity" record --url "http://127.0.0.1:${port}/pods" --duration "${SECS}s" --out "${DIR}/${name}.json" \
    --delete-from "${DIR}/manifests" ||
    { tail -n 30 "${DIR}/${name}.log" >&2; kk_die "${name}: recording failed; see ${DIR}/${name}.log"; }
  kk_pid_alive "${AGENT_PID}" || kk_die "${name} exited during the recording; see ${DIR}/${name}.log"
  stop_agent
  kk_log "${name}: recorded ${SECS}s into ${DIR}/${name}.json"
}

main() {
  # Upstream kubelet leaves its pods' volumes mounted when it stops.
  kk_unmount_under "${DIR}"
  rm -rf "${DIR}"
  mkdir -p "${DIR}/manifests" "${DIR}/objects"
  kk_share_dir "${DIR}"
  UP_PORT="$(kk_free_port)"
  UP_MAIN_PORT="$(kk_free_port)"
  MINI_PORT="$(kk_free_port)"
  cp "${MANIFESTS}"/*.yaml "${DIR}/manifests/"
  cp "${OBJECTS}"/*.yaml "${DIR}/objects/" 2>/dev/null || true
  kk_build_upstream kubelet "${KK_KUBELET_BIN}"
  # The web server image (hack/webserver) for the HTTP and TCP probes;
  # containerd-start.sh imports only busybox and pause.
  [[ -f "${KK_IMAGES}/webserver.oci.tar" ]] || kk_die "${KK_IMAGES}/webserver.oci.tar missing: run hack/containerd-setup.sh"
  kk_ctr images import --base-name "${KK_WEBSERVER_IMAGE%:*}" "${KK_IMAGES}/webserver.oci.tar" >/dev/null
  (cd "${HACK_DIR}/.." && go build -o "${DIR}/fidelity" ./hack/fidelity && go build -o "${DIR}/minikubelet" ./examples/minikubelet)

  kk_write_kubelet_config "${DIR}/kubelet.yaml" "${DIR}/manifests" "${DIR}/upstream-logs" "${KK_ENDPOINT}" \
    "${UP_PORT}" "${UP_MAIN_PORT}" "evictionHard: {${EVICTION_HARD/</: }}"
  # Both agents keep the QoS cgroups (cgroupfs; node allocatable enforced
  # on kubepods, no kube-reserved): the qos-* pods read theirs back.
  sed -i -e 's/^cgroupsPerQOS: false$/cgroupsPerQOS: true/' \
    -e 's/^enforceNodeAllocatable: \[\]$/enforceNodeAllocatable: [pods]/' "${DIR}/kubelet.yaml"
  grep -q '^cgroupsPerQOS: true$' "${DIR}/kubelet.yaml" || kk_die "kubelet.yaml: cgroupsPerQOS not turned on"
  # The phases run under set -e (never as `phase || ...`, which would turn
  # it off inside them); a comparison that differs sets DIFFERS.
  if [[ "${KK_FIDELITY_STANDALONE:-1}" == 1 ]]; then
    standalone_phase
  fi
  if [[ "${KK_FIDELITY_API:-1}" == 1 ]]; then
    api_phase
  fi
  if [[ "${KK_FIDELITY_VK:-1}" == 1 ]]; then
    vk_phase
  fi
  return "${DIFFERS}"
}

# standalone_phase: the pods as static pods of each agent, compared as each
# serves them on its read-only /pods.
standalone_phase() {
  run upstream "${UP_PORT}" "${KK_KUBELET_BIN}" --config="${DIR}/kubelet.yaml" \
    --root-dir="${DIR}/upstream-root" --cert-dir="${DIR}/upstream-pki" --hostname-override=kk-node --v=2
  # kubelet falls back to lenient decoding on a field it does not know,
  # silently using its default: refuse that, so the setup is what it says.
  if grep -q 'strict decoding error' "${DIR}/upstream.log"; then
    grep 'strict decoding error' "${DIR}/upstream.log" >&2
    kk_die "kubelet did not take ${DIR}/kubelet.yaml as written"
  fi
  run minikubelet "${MINI_PORT}" "${DIR}/minikubelet" --container-runtime-endpoint "${KK_ENDPOINT}" \
    --pod-manifest-path "${DIR}/manifests" --node-name kk-node --root-dir "${DIR}/minikubelet-root" \
    --address 127.0.0.1 --read-only-port "${MINI_PORT}" --port 0 --healthz-port 0 --eviction-hard "${EVICTION_HARD}" --cgroups-per-qos --cgroup-driver cgroupfs \
    --enforce-node-allocatable pods -v

  "${DIR}/fidelity" compare "${DIR}/upstream.json" "${DIR}/minikubelet.json" >"${DIR}/report.txt" || DIFFERS=1
  cat "${DIR}/report.txt"
  kk_log "report: ${DIR}/report.txt"
}

# api_phase: the same pods created through an API server and bound to the
# node, under each agent joined to it with the node's credentials; the
# statuses compared are the API server's.
api_phase() {
  bash "${HACK_DIR}/controlplane-start.sh" >/dev/null
  # shellcheck disable=SC1090,SC1091
  source "${KK_CP_ENV}"
  local api=(--server "${KK_APISERVER_URL}" --token "${KK_APISERVER_TOKEN}" --ca "${KK_APISERVER_CA}")
  local empty="${DIR}/api-static"
  mkdir -p "${empty}"
  sed -e "s|^staticPodPath: .*|staticPodPath: ${empty}|" -e "s|upstream-logs|upstream-api-logs|" \
    "${DIR}/kubelet.yaml" >"${DIR}/kubelet-api.yaml"
  run_api upstream-api "${KK_KUBELET_BIN}" --config="${DIR}/kubelet-api.yaml" --kubeconfig="${KK_NODE_KUBECONFIG}" \
    --root-dir="${DIR}/upstream-api-root" --cert-dir="${DIR}/upstream-api-pki" --hostname-override=kk-node --v=2
  run_api minikubelet-api "${DIR}/minikubelet" --container-runtime-endpoint "${KK_ENDPOINT}" \
    --kubeconfig "${KK_NODE_KUBECONFIG}" --node-name kk-node --root-dir "${DIR}/minikubelet-api-root" \
    --address 127.0.0.1 --read-only-port "${MINI_PORT}" --port 0 --healthz-port 0 --eviction-hard "${EVICTION_HARD}" -v
  "${DIR}/fidelity" compare "${DIR}/upstream-api.json" "${DIR}/minikubelet-api.json" >"${DIR}/report-api.txt" || DIFFERS=1
  cat "${DIR}/report-api.txt"
  kk_log "report, API-server pods: ${DIR}/report-api.txt"
}

# vk_phase: the same pods through the API server under virtual-kubelet's
# own node controller (nodeutil) with our adapter (examples/vknode), on
# containerd and on the embedded fake runtime, each compared with
# minikubelet on the same backend; then virtual-kubelet's mock provider on
# the same pods, the baseline: its report is printed and kept, never a
# failure. virtual-kubelet's nodeutil lists and watches the configMaps,
# secrets and services of every namespace, which the Node authorizer does
# not allow a node: the virtual-kubelet runs get the admin kubeconfig, as a
# virtual-kubelet deployment gets a cluster role.
vk_phase() {
  bash "${HACK_DIR}/controlplane-start.sh" >/dev/null
  # shellcheck disable=SC1090,SC1091
  source "${KK_CP_ENV}"
  local api=(--server "${KK_APISERVER_URL}" --token "${KK_APISERVER_TOKEN}" --ca "${KK_APISERVER_CA}")
  local vk_port
  vk_port="$(kk_free_port)"
  kk_build_virtual_kubelet
  (cd "${HACK_DIR}/.." && go build -o "${DIR}/vknode" ./examples/vknode)
  [[ -f "${DIR}/minikubelet-api.json" ]] ||
    run_api minikubelet-api "${DIR}/minikubelet" --container-runtime-endpoint "${KK_ENDPOINT}" \
      --kubeconfig "${KK_NODE_KUBECONFIG}" --node-name kk-node --root-dir "${DIR}/minikubelet-api-root" \
      --address 127.0.0.1 --read-only-port "${MINI_PORT}" --port 0 --healthz-port 0 --eviction-hard "${EVICTION_HARD}" -v
  run_api vk-containerd "${DIR}/vknode" --container-runtime-endpoint "${KK_ENDPOINT}" \
    --kubeconfig "${KK_KUBECONFIG}" --node-name kk-node --root-dir "${DIR}/vk-containerd-root" --port "${vk_port}" \
    --cgroups-per-qos -v
  "${DIR}/fidelity" compare "${DIR}/minikubelet-api.json" "${DIR}/vk-containerd.json" >"${DIR}/report-vk.txt" || DIFFERS=1
  cat "${DIR}/report-vk.txt"
  kk_log "report, virtual-kubelet with the adapter on containerd: ${DIR}/report-vk.txt"

  run_api minikubelet-api-fake "${DIR}/minikubelet" \
    --kubeconfig "${KK_NODE_KUBECONFIG}" --node-name kk-node --root-dir "${DIR}/minikubelet-api-fake-root" \
    --address 127.0.0.1 --read-only-port "${MINI_PORT}" --port 0 --healthz-port 0 --eviction-hard "${EVICTION_HARD}" -v
  run_api vk-fake "${DIR}/vknode" \
    --kubeconfig "${KK_KUBECONFIG}" --node-name kk-node --root-dir "${DIR}/vk-fake-root" --port "${vk_port}" -v
  "${DIR}/fidelity" compare "${DIR}/minikubelet-api-fake.json" "${DIR}/vk-fake.json" >"${DIR}/report-vk-fake.txt" || DIFFERS=1
  cat "${DIR}/report-vk-fake.txt"
  kk_log "report, virtual-kubelet with the adapter on the fake runtime: ${DIR}/report-vk-fake.txt"

  printf '{"kk-node": {"cpu": "8", "memory": "16Gi", "pods": "110"}}\n' >"${DIR}/vk-mock.json"
  kk_serving_cert "${DIR}/vk-mock-pki" kk-node
  KUBELET_PORT="${vk_port}" APISERVER_CERT_LOCATION="${DIR}/vk-mock-pki/tls.crt" \
    APISERVER_KEY_LOCATION="${DIR}/vk-mock-pki/tls.key" \
    run_api vk-mock "${KK_VK_BIN}" --provider mock --provider-config "${DIR}/vk-mock.json" --nodename kk-node \
    --kubeconfig "${KK_KUBECONFIG}" --disable-taint --metrics-addr "127.0.0.1:$(kk_free_port)"
  "${DIR}/fidelity" compare "${DIR}/minikubelet-api.json" "${DIR}/vk-mock.json" >"${DIR}/report-vk-mock.txt" || true
  kk_log "baseline, virtual-kubelet's mock provider against minikubelet: ${DIR}/report-vk-mock.txt ($(grep -c . "${DIR}/report-vk-mock.txt") lines)"
}

# run_api NAME CMD...: from an empty node and no pods bound to it, start the
# agent, create the pods once its Node is Ready, record their statuses as
# the API server has them, stop the agent and delete the pods and the Node.
run_api() {
  local name="$1"
  shift
  clean
  "${DIR}/fidelity" clean "${api[@]}"
  rm -f "${DIR}/manifests"/*.yaml
  cp "${MANIFESTS}"/*.yaml "${DIR}/manifests/"
  start_agent "${name}" "$@"
  "${DIR}/fidelity" create "${api[@]}" --objects "${DIR}/objects" "${DIR}/manifests" ||
    { tail -n 30 "${DIR}/${name}.log" >&2; kk_die "${name}: creating the pods failed; see ${DIR}/${name}.log"; }
  "${DIR}/fidelity" record "${api[@]}" --duration "${SECS}s" --out "${DIR}/${name}.json" --delete-from "${DIR}/manifests" ||
    { tail -n 30 "${DIR}/${name}.log" >&2; kk_die "${name}: recording failed; see ${DIR}/${name}.log"; }
  kk_pid_alive "${AGENT_PID}" || kk_die "${name} exited during the recording; see ${DIR}/${name}.log"
  stop_agent
  "${DIR}/fidelity" clean "${api[@]}"
  kk_log "${name}: recorded ${SECS}s into ${DIR}/${name}.json"
}

main "$@"

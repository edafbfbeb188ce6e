#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# hack/scale-kwok.sh: the load of hack/scale.sh on KWOK's nodes, for the
# side-by-side figures of docs/scale.md. Not run by CI.
#
#   bash hack/controlplane-setup.sh && bash hack/controlplane-start.sh
#   KK_SCALE_NODES=100 KK_SCALE_PODS_PER_NODE=110 KK_SCALE_PROBES=3 bash hack/scale-kwok.sh
#
#   1. builds kwok (sigs.k8s.io/kwok/cmd/kwok, $KK_KWOK_VERSION, v0.8.0)
#      from its Go module into $KK_APISERVER_CACHE/kwok-<version>, once, in
#      a directory of its own (GOWORK=off: this repository's modules are not
#      touched), and writes its configuration: the Stage objects of the
#      module's kustomize/stage/node/fast, node/heartbeat-with-lease and
#      pod/fast (KWOK's defaults for "kwokctl create cluster");
#   2. creates KK_SCALE_NODES Nodes named $KK_SCALE_PREFIX0000... (default
#      kwok-), annotated kwok.x-k8s.io/node=fake, with the capacity
#      examples/nodefarm reports (32 CPUs, 256Gi, 110 pods);
#   3. starts kwok on them (--manage-nodes-with-annotation-selector, leases
#      of 40s), its log in $KK_WORK/scale-kwok/kwok.log;
#   4. runs the same "scalenodes load" and "scalenodes heartbeat" as
#      hack/scale.sh, and measures kwok's CPU and RSS the same way;
#   5. stops kwok (by its PID) and deletes the pods, Nodes and Leases.
# Environment: those of hack/scale.sh (KK_SCALE_PPROF excepted), and
# KK_KWOK_VERSION.
set -euo pipefail
HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export KK_APISERVER_CACHE="${KK_APISERVER_CACHE:-${HOME}/.cache/kubeletkit}"
# shellcheck source=lib.sh
source "${HACK_DIR}/lib.sh"

NODES="${KK_SCALE_NODES:-50}"
PODS="${KK_SCALE_PODS_PER_NODE:-30}"
RATE="${KK_SCALE_RATE:-50}"
PROBES="${KK_SCALE_PROBES:-2}"
TIMEOUT="${KK_SCALE_TIMEOUT:-5m}"
STEADY="${KK_SCALE_STEADY_SECONDS:-30}"
PREFIX="${KK_SCALE_PREFIX:-kwok-}"
VERSION="${KK_KWOK_VERSION:-v0.8.0}"
DIR="${KK_WORK}/scale-kwok"
KWOK="${KK_APISERVER_CACHE}/kwok-${VERSION}"
SCALENODES="${DIR}/bin/scalenodes"
REPORT="${DIR}/report.txt"

CP_ENV="${KK_WORK}/controlplane/env"
[[ -f "${CP_ENV}" ]] || kk_die "no control plane: ${CP_ENV} is missing (run hack/controlplane-start.sh)"
# shellcheck disable=SC1090
source "${CP_ENV}"
mkdir -p "${DIR}/bin" "${KK_APISERVER_CACHE}"
: >"${REPORT}"
report() { printf '%s\n' "$*" | tee -a "${REPORT}"; }

if [[ ! -x "${KWOK}" ]]; then
  kk_log "building kwok ${VERSION} from its Go module"
  build="$(mktemp -d)"
  (cd "${build}" && GOWORK=off GOBIN="${build}/bin" go install "sigs.k8s.io/kwok/cmd/kwok@${VERSION}")
  mv "${build}/bin/kwok" "${KWOK}"
  rm -rf "${build}"
fi
(cd "${HACK_DIR}/.." && go build -o "${SCALENODES}" ./examples/scalenodes)

# The stages, from the module's own copy.
moddir="$(cd "$(mktemp -d)" && GOWORK=off GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/kwok@${VERSION}" | awk -F'"' '$2 == "Dir" {print $4}')"
[[ -d "${moddir}" ]] || kk_die "sigs.k8s.io/kwok@${VERSION}: no module directory"
: >"${DIR}/stages.yaml"
for f in "${moddir}"/kustomize/stage/node/fast/node-initialize.yaml \
  "${moddir}"/kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
  "${moddir}"/kustomize/stage/pod/fast/pod-ready.yaml \
  "${moddir}"/kustomize/stage/pod/fast/pod-complete.yaml \
  "${moddir}"/kustomize/stage/pod/fast/pod-delete.yaml; do
  printf -- '---\n' >>"${DIR}/stages.yaml"
  cat "${f}" >>"${DIR}/stages.yaml"
done

kk_log "creating ${NODES} KWOK nodes"
{
  for ((i = 0; i < NODES; i++)); do
    name="$(printf '%s%04d' "${PREFIX}" "${i}")"
    cat <<YAML
---
apiVersion: v1
kind: Node
metadata:
  name: ${name}
  annotations: {kwok.x-k8s.io/node: fake}
  labels: {kubernetes.io/hostname: ${name}, kubernetes.io/os: linux, kubernetes.io/arch: amd64, type: kwok}
status:
  capacity: {cpu: "32", memory: 256Gi, ephemeral-storage: 1Ti, pods: "110"}
  allocatable: {cpu: "32", memory: 256Gi, ephemeral-storage: 1Ti, pods: "110"}
YAML
  done
} >"${DIR}/nodes.yaml"

kwok_pid=""
cleanup() {
  local status=$?
  if [[ -n "${kwok_pid}" ]] && kk_pid_alive "${kwok_pid}"; then
    kk_stop_pid kwok "${kwok_pid}" 15 || true
    wait "${kwok_pid}" 2>/dev/null || true
  fi
  "${SCALENODES}" clean --kubeconfig "${KK_KUBECONFIG}" --node-name-prefix "${PREFIX}" || status=1
  exit "${status}"
}
trap cleanup EXIT
"${KK_KUBECTL}" --kubeconfig "${KK_KUBECONFIG}" create -f "${DIR}/nodes.yaml" >/dev/null

kk_log "starting kwok"
"${KWOK}" --kubeconfig "${KK_KUBECONFIG}" --config "${DIR}/stages.yaml" \
  --manage-all-nodes=false --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
  --node-lease-duration-seconds 40 --server-address "127.0.0.1:$(kk_free_port)" >"${DIR}/kwok.log" 2>&1 &
kwok_pid=$!

report "kwok ${VERSION}: ${NODES} nodes x ${PODS} pods, ${PROBES} probes per pod (KWOK runs none), ${RATE} pods/s ($(nproc) CPUs)"
"${SCALENODES}" load --kubeconfig "${KK_KUBECONFIG}" --nodes "${NODES}" --node-name-prefix "${PREFIX}" \
  --pods-per-node "${PODS}" --rate "${RATE}" --probes "${PROBES}" --timeout "${TIMEOUT}" | tee -a "${REPORT}"
kk_pid_alive "${kwok_pid}" || { tail -50 "${DIR}/kwok.log"; kk_die "kwok ended"; }

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
status_kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
if ((STEADY > 0)); then
  hz="$(getconf CLK_TCK)"
  t0="$(cpu_ticks "${kwok_pid}")"
  w0="$(date +%s.%N)"
  "${SCALENODES}" heartbeat --kubeconfig "${KK_KUBECONFIG}" --nodes "${NODES}" --node-name-prefix "${PREFIX}" \
    --for "${STEADY}s" | tee -a "${REPORT}"
  t1="$(cpu_ticks "${kwok_pid}")"
  w1="$(date +%s.%N)"
  report "$(awk -v t0="${t0}" -v t1="${t1}" -v w0="${w0}" -v w1="${w1}" -v hz="${hz}" -v n="${NODES}" \
    'BEGIN { c = (t1 - t0) / hz / (w1 - w0); printf "kwok: steady-state CPU %.3f cores (%.4f per node) over %.0fs", c, c / n, w1 - w0 }')"
fi
rss="$(status_kb "${kwok_pid}" VmRSS)"
hwm="$(status_kb "${kwok_pid}" VmHWM)"
report "$(awk -v r="${rss}" -v h="${hwm}" -v n="${NODES}" \
  'BEGIN { printf "kwok: RSS %.0f MiB (%.1f MiB per node), peak %.0f MiB", r / 1024, r / 1024 / n, h / 1024 }')"

#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# hack/cluster-conformance.sh: upstream's cluster suite (k8s.io/kubernetes/test/e2e,
# e2e.test of KK_K8S_VERSION) against the cluster of hack/cluster.sh (issue 37).
#
#   bash hack/containerd-setup.sh && bash hack/controlplane-setup.sh
#   bash hack/conformance-images.sh build
#   bash hack/cluster.sh up && bash hack/cluster.sh images
#   bash hack/cluster-conformance.sh [build] [--pass-list FILE [--only-pass-list]]
#
# It builds e2e.test from hack/e2enode's module (go test -c, cached per version
# in KK_APISERVER_CACHE, about 20 minutes with a cold Go build cache; the
# ginkgo CLI is hack/conformance.sh's, built the same way) and runs it with
# the ginkgo CLI in the cluster's control-plane network namespace, with the
# admin kubeconfig, KUBE_TEST_REPO_LIST pointing every image at the
# registry each node serves on its own 127.0.0.1:5055 (hack/cluster.sh
# images), provider skeleton. The specs: those labelled Conformance and not
# Serial or Disruptive, in KK_CLUSTER_PROCS (8) processes, narrowed by
# KK_CLUSTER_FOCUS (a ginkgo --focus) when given; then, with
# KK_CLUSTER_SERIAL=1, the Serial ones in one process, as sonobuoy's
# certified-conformance mode runs them. JUnit and JSON reports and the
# output go to $KK_WORK/cluster/conformance/{parallel,serial}/, and
# hack/conformance's summary of both parts (passed.txt, failed.txt,
# summary.txt) to $KK_WORK/cluster/conformance/.
#
#   build             only build e2e.test, ginkgo and hack/conformance (no
#                     cluster needed).
#   full              the whole run as one command: the setups and image
#                     builds (cached), hack/cluster.sh up (KK_CLUSTER_KUBELETS)
#                     and images, the parallel and then the Serial specs,
#                     down; writes $KK_WORK/cluster/conformance/run.txt with
#                     the times, the machine's peak memory in use over its
#                     use before the cluster, and each kubelet's peak RSS.
#   --pass-list FILE  a recorded pass list (hack/conformance passed writes one):
#                     the run fails when a spec of it does not pass (a
#                     regression), whatever else failed.
#   --only-pass-list  run exactly the specs of --pass-list, in the parallel
#                     part, whatever their labels (a curated list holds no
#                     Serial spec).
#
# Exit status: with --pass-list, 1 on a regression; without, ginkgo's.
# KK_CLUSTER_LABELS replaces the parallel part's label filter (to curate a
# list that holds specs outside [Conformance]). KK_CLUSTER_TIMEOUT is
# ginkgo's --timeout (2h). Needs root.
set -euo pipefail
HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "${HACK_DIR}/lib.sh"

CDIR="${KK_WORK}/cluster"
CP_NS="kkc-${KK_CLUSTER_ID:-kk}-cp"
OUT="${CDIR}/conformance"
E2E_BIN="${KK_APISERVER_CACHE}/e2e.test-${KK_K8S_VERSION}"
GINKGO_BIN="${KK_APISERVER_CACHE}/ginkgo-${KK_K8S_VERSION}"
PROCS="${KK_CLUSTER_PROCS:-8}"
TIMEOUT="${KK_CLUSTER_TIMEOUT:-2h}"
# Outside CDIR, which cluster.sh up makes anew.
TOOL="${KK_WORK}/tools/conformance"
MEM_PEAK="${KK_WORK}/tools/cluster-mem-peak"
MODE=run
PASS_LIST=""
ONLY=0
while [[ $# -gt 0 ]]; do
  case "$1" in
  build | full) MODE="$1" ;;
  --pass-list)
    [[ $# -ge 2 && -f "$2" ]] || kk_die "--pass-list needs a file"
    PASS_LIST="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
    shift
    ;;
  --only-pass-list) ONLY=1 ;;
  *) kk_die "unknown argument $1 (see the header of $0)" ;;
  esac
  shift
done
[[ "${ONLY}" == 0 || -n "${PASS_LIST}" ]] || kk_die "--only-pass-list needs --pass-list"

build() {
  if [[ ! -x "${E2E_BIN}" || "${KK_REBUILD:-0}" == 1 ]]; then
    local t0=${SECONDS}
    kk_log "building e2e.test ${KK_K8S_VERSION} (about 20 minutes on 2 cores with a cold Go build cache)"
    # -vet=off: go test -c would vet the whole suite first.
    (cd "${HACK_DIR}/e2enode" && GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0 nice -n 10 \
      go test -c -vet=off -trimpath -ldflags "-s -w" -o "${E2E_BIN}.tmp" k8s.io/kubernetes/test/e2e) ||
      { rm -f "${E2E_BIN}.tmp"; kk_die "e2e.test build failed"; }
    mv -f "${E2E_BIN}.tmp" "${E2E_BIN}"
    kk_log "built ${E2E_BIN} in $((SECONDS - t0))s"
  fi
  if [[ ! -x "${GINKGO_BIN}" ]]; then
    (cd "${HACK_DIR}/e2enode" && GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0 nice -n 10 \
      go build -trimpath -o "${GINKGO_BIN}.tmp" github.com/onsi/ginkgo/v2/ginkgo) || kk_die "ginkgo build failed"
    mv -f "${GINKGO_BIN}.tmp" "${GINKGO_BIN}"
  fi
  mkdir -p "$(dirname "${TOOL}")"
  (cd "${HACK_DIR}/.." && go build -o "${TOOL}" ./hack/conformance) || kk_die "hack/conformance build failed"
}

# run NAME PROCS LABELS [GINKGO_FLAG...]: one ginkgo run into OUT/NAME.
run() {
  local name="$1" procs="$2" labels="$3"
  shift 3
  mkdir -p "${OUT}/${name}"
  # The ginkgo CLI runs a compiled suite only by a name ending in .test.
  ln -sf "${E2E_BIN}" "${OUT}/${name}/e2e.test"
  kk_log "${name}: ginkgo --procs=${procs} --label-filter='${labels}' $*"
  local rc=0
  (cd "${OUT}/${name}" && nsenter --net="/run/netns/${CP_NS}" -- \
    env KUBE_TEST_REPO_LIST="${KK_WORK}/conformance/repo-list.yaml" \
    "${GINKGO_BIN}" --procs="${procs}" --no-color --timeout="${TIMEOUT}" --label-filter="${labels}" \
    --junit-report=junit.xml --json-report=report.json "$@" ./e2e.test -- \
    --kubeconfig="${CDIR}/cp/controlplane/kubeconfig" --provider=skeleton \
    --kubectl-path="${KK_KUBECTL_BIN}" --report-dir="${OUT}/${name}") >"${OUT}/${name}/output.txt" 2>&1 || rc=$?
  grep -a -E '^(Ran |SUCCESS|FAIL!|  \[FAIL\])' "${OUT}/${name}/output.txt" || true
  return "${rc}"
}

# suite runs the specs on the running cluster (see the header).
suite() {
  [[ "$(id -u)" == 0 ]] || kk_die "needs root (network namespaces)"
  [[ -e "/run/netns/${CP_NS}" && -f "${CDIR}/cp/controlplane/kubeconfig" ]] || kk_die "no cluster: run hack/cluster.sh up"
  [[ -f "${KK_WORK}/conformance/repo-list.yaml" ]] || kk_die "no image list: run hack/conformance-images.sh build"
  rm -rf "${OUT}"
  mkdir -p "${OUT}"
  local focus=() rc=0 labels="${KK_CLUSTER_LABELS:-Conformance && !Serial && !Disruptive}" reports="${OUT}/parallel/report.json"
  [[ -z "${KK_CLUSTER_FOCUS:-}" ]] || focus=(--focus="${KK_CLUSTER_FOCUS}")
  if [[ "${ONLY}" == 1 ]]; then
    # The list's own specs, whatever their labels.
    focus=(--focus="$("${TOOL}" focus "${PASS_LIST}")")
    labels='!Serial && !Disruptive'
  fi
  run parallel "${PROCS}" "${labels}" "${focus[@]}" || rc=$?
  if [[ "${KK_CLUSTER_SERIAL:-0}" == 1 && "${ONLY}" == 0 ]]; then
    run serial 1 'Conformance && Serial && !Disruptive' "${focus[@]}" || rc=$?
    reports+=",${OUT}/serial/report.json"
  fi
  kk_log "reports in ${OUT}"
  local check=0
  "${TOOL}" summarize --report "${reports}" --out "${OUT}" ${PASS_LIST:+--pass-list "${PASS_LIST}"} || check=$?
  [[ ! -f "${OUT}/summary.txt" ]] || tail -n 1 "${OUT}/summary.txt"
  if [[ -n "${PASS_LIST}" ]]; then
    # The recorded list decides: a spec outside it may fail (it is not
    # known to pass), a spec of it may not.
    return "${check}"
  fi
  return "${rc}"
}

# kubelet_hwm N: the peak resident memory (VmHWM, kB) of node N's kubelet:
# the process under the node's kubelet.pid (setsid, nsenter and the
# mount-namespace wrapper come first) that runs the kubelet binary.
kubelet_hwm() {
  local dir="${CDIR}/n$1" bin pid p todo
  bin="$(cat "${dir}/kubelet.bin" 2>/dev/null)" || return 0
  pid="$(tr -dc '0-9' <"${dir}/kubelet.pid")"
  todo=("${pid}")
  while [[ ${#todo[@]} -gt 0 ]]; do
    p="${todo[0]}"
    todo=("${todo[@]:1}")
    if [[ "$(readlink "/proc/${p}/exe" 2>/dev/null)" == "$(readlink -f "${bin}")" ]]; then
      awk '/^VmHWM:/ {print $2}' "/proc/${p}/status"
      return 0
    fi
    # shellcheck disable=SC2207
    todo+=($(cat /proc/"${p}"/task/*/children 2>/dev/null))
  done
}

# full: the whole run as one command (see the header).
full() {
  local t0=${SECONDS} start base rc=0 n
  start="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  bash "${HACK_DIR}/containerd-setup.sh"
  bash "${HACK_DIR}/controlplane-setup.sh"
  bash "${HACK_DIR}/conformance-images.sh" build
  build
  # The machine's memory in use (MemTotal - MemAvailable) before the
  # cluster, then its peak every 5 seconds while the cluster runs.
  base="$(awk '/^MemTotal:/ {t=$2} /^MemAvailable:/ {a=$2} END {print t-a}' /proc/meminfo)"
  mkdir -p "$(dirname "${MEM_PEAK}")"
  printf '%s\n' "${base}" >"${MEM_PEAK}"
  (
    while :; do
      awk -v f="${MEM_PEAK}" '/^MemTotal:/ {t=$2} /^MemAvailable:/ {a=$2}
        END {getline p <f; close(f); if (t-a > p) {print t-a >f}}' /proc/meminfo
      sleep 5
    done
  ) &
  SAMPLER=$!
  trap 'kill "${SAMPLER}" 2>/dev/null || true; bash "${HACK_DIR}/cluster.sh" down' EXIT
  local t_up=${SECONDS}
  bash "${HACK_DIR}/cluster.sh" up
  bash "${HACK_DIR}/cluster.sh" images
  local t_suite=${SECONDS}
  KK_CLUSTER_SERIAL=1 suite || rc=$?
  local hwm=() peak
  for n in 1 2; do hwm+=("$(kubelet_hwm "${n}")"); done
  kill "${SAMPLER}" 2>/dev/null || true
  wait "${SAMPLER}" 2>/dev/null || true
  peak="$(cat "${MEM_PEAK}")"
  {
    printf 'kubelets: %s\n' "${KK_CLUSTER_KUBELETS:-minikubelet minikubelet}"
    printf 'started: %s\n' "${start}"
    printf 'setup (builds, images): %ss; cluster up and images: %ss; suite (parallel %s processes, then serial): %ss; wall: %ss\n' \
      "$((t_up - t0))" "$((t_suite - t_up))" "${PROCS}" "$((SECONDS - t_suite))" "$((SECONDS - t0))"
    printf 'machine memory in use: %s MiB before the cluster, %s MiB at its peak (+%s MiB)\n' \
      "$((base / 1024))" "$((peak / 1024))" "$(((peak - base) / 1024))"
    printf 'kubelet peak RSS (VmHWM): node 1 %s MiB, node 2 %s MiB\n' "$((${hwm[0]:-0} / 1024))" "$((${hwm[1]:-0} / 1024))"
    tail -n 1 "${OUT}/summary.txt" 2>/dev/null || true
  } | tee "${OUT}/run.txt"
  return "${rc}"
}

case "${MODE}" in
build) build ;;
full) full ;;
*)
  build
  suite
  ;;
esac

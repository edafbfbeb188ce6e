#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# hack/cluster-conformance.sh: upstream's cluster suite (k8s.io/kubernetes/test/e2e,
# e2e.test of KK_K8S_VERSION) against the cluster of hack/cluster.sh (issue 37).
#
#   bash hack/containerd-setup.sh && bash hack/controlplane-setup.sh
#   bash hack/conformance-images.sh build
#   bash hack/cluster.sh up && bash hack/cluster.sh images
#   bash hack/cluster-conformance.sh
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
# output go to $KK_WORK/cluster/conformance/. Its exit status is ginkgo's.
# KK_CLUSTER_TIMEOUT is ginkgo's --timeout (2h). Needs root.
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

[[ "$(id -u)" == 0 ]] || kk_die "needs root (network namespaces)"
[[ -e "/run/netns/${CP_NS}" && -f "${CDIR}/cp/controlplane/kubeconfig" ]] || kk_die "no cluster: run hack/cluster.sh up"
[[ -f "${KK_WORK}/conformance/repo-list.yaml" ]] || kk_die "no image list: run hack/conformance-images.sh build"

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

main() {
  build
  rm -rf "${OUT}"
  mkdir -p "${OUT}"
  local focus=() rc=0
  [[ -z "${KK_CLUSTER_FOCUS:-}" ]] || focus=(--focus="${KK_CLUSTER_FOCUS}")
  run parallel "${PROCS}" 'Conformance && !Serial && !Disruptive' "${focus[@]}" || rc=$?
  if [[ "${KK_CLUSTER_SERIAL:-0}" == 1 ]]; then
    run serial 1 'Conformance && Serial && !Disruptive' "${focus[@]}" || rc=$?
  fi
  kk_log "reports in ${OUT}"
  return "${rc}"
}

main "$@"

#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# hack/bench-startup.sh: upstream kubelet and minikubelet side by side, from a
# fresh start to N static pods Running, through a steady state, one added pod
# and the deletion of every pod (docs/benchmarks-startup.md).
#
#   bash hack/containerd-setup.sh && bash hack/containerd-start.sh   # for the containerd runs
#   bash hack/bench-startup.sh
#
# For each N of $KK_BENCH_SIZES (10 100 500), upstream kubelet $KK_K8S_VERSION
# and then minikubelet each run against a fresh examples/fakecri (its own
# socket); then both on containerd with $KK_BENCH_CONTAINERD_SIZE (10) pods
# (0 skips it; so does a containerd that is not running). Each run has a
# directory of its own under $KK_WORK/bench-startup: manifests, root dir,
# logs, upstream's --cert-dir, and the /var/lib/kubelet the kubelet sees
# (lib.sh, kk_isolate: nothing is written to the host's). hack/bench
# (Go) writes the manifests before the kubelet starts, starts it, measures
# (the steady state lasts $KK_BENCH_STEADY_SECONDS, 60) and stops it; the
# tables are $KK_WORK/bench-startup/report.md. Ports are picked free at
# start. Only the processes this script started are stopped, and on
# containerd only the pods named bench-* are removed. Needs root.
#
# The upstream kubelet binary is cached in $KK_APISERVER_CACHE (here by
# default $HOME/.cache/kubeletkit, as .ci/run has it); building it takes about
# four minutes. minikubelet, fakecri and hack/bench are built from this tree;
# the report names its commit ($KK_BENCH_COMMIT when set, for a tree exported
# with git archive, which has no .git).
set -euo pipefail
HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export KK_APISERVER_CACHE="${KK_APISERVER_CACHE:-${HOME}/.cache/kubeletkit}"
# shellcheck source=lib.sh
source "${HACK_DIR}/lib.sh"

SIZES="${KK_BENCH_SIZES-10 100 500}"
CTRD_SIZE="${KK_BENCH_CONTAINERD_SIZE:-10}"
STEADY="${KK_BENCH_STEADY_SECONDS:-60}"
DIR="${KK_WORK}/bench-startup"
BIN="${DIR}/bin"
NODE=kk-bench
AGENT_PIDFILE=""
AGENT_BIN=""
FAKECRI_PID=""
CLEAN_CONTAINERD=0

[[ "$(id -u)" == 0 ]] || kk_die "needs root (mount namespaces, and containers on containerd)"

stop_agent() {
  local pid=""
  [[ -n "${AGENT_PIDFILE}" && -f "${AGENT_PIDFILE}" ]] && pid="$(tr -dc '0-9' <"${AGENT_PIDFILE}")"
  if [[ -n "${pid}" ]] && kk_runs "${pid}" "${AGENT_BIN}"; then
    kk_stop_pid kubelet "${pid}" 20 || true
  fi
  AGENT_PIDFILE=""
}

stop_fakecri() {
  if [[ -n "${FAKECRI_PID}" ]] && kk_runs "${FAKECRI_PID}" "${BIN}/fakecri"; then
    kk_stop_pid fakecri "${FAKECRI_PID}" 10 || true
  fi
  FAKECRI_PID=""
}

cleanup() {
  stop_agent
  stop_fakecri
  if [[ "${CLEAN_CONTAINERD}" == 1 ]]; then
    "${BIN}/bench" clean --cri "${KK_ENDPOINT}" || kk_log "warning: bench clean failed on ${KK_ENDPOINT}"
  fi
  kk_unmount_under "${DIR}"
}
trap cleanup EXIT

# start_fakecri RUNDIR: a fresh fake runtime on RUNDIR/fakecri.sock.
start_fakecri() {
  local sock="$1/fakecri.sock" i
  "${BIN}/fakecri" --listen "unix://${sock}" --quiet >"$1/fakecri.log" 2>&1 </dev/null &
  FAKECRI_PID=$!
  for ((i = 0; i < 100; i++)); do
    [[ -S "${sock}" ]] && return 0
    kk_pid_alive "${FAKECRI_PID}" || break
    sleep 0.1
  done
  cat "$1/fakecri.log" >&2
  kk_die "fakecri did not serve ${sock}"
}

# one RUNTIME N AGENT: one kubelet's run, its result in results/.
one() {
  local runtime="$1" n="$2" agent="$3" rd endpoint port main_port cmd
  rd="${DIR}/${runtime}-${n}-${agent}"
  mkdir -p "${rd}"
  if [[ "${runtime}" == fakecri ]]; then
    start_fakecri "${rd}"
    endpoint="unix://${rd}/fakecri.sock"
  else
    endpoint="${KK_ENDPOINT}"
    "${BIN}/bench" clean --cri "${endpoint}"
  fi
  "${BIN}/bench" manifests --dir "${rd}/manifests" --n "${n}" --extra "${rd}/extra/bench-extra.yaml" \
    --image "${KK_BUSYBOX_IMAGE}"
  port="$(kk_free_port)"
  # Both kubelets serve their API over TLS too (a self-signed certificate
  # made at start), as they would on a node.
  main_port="$(kk_free_port)"
  if [[ "${agent}" == upstream ]]; then
    # maxPods: the default, 110, would refuse most of 500 pods (minikubelet:
    # --max-pods below).
    kk_write_kubelet_config "${rd}/kubelet.yaml" "${rd}/manifests" "${rd}/pod-logs" "${endpoint}" \
      "${port}" "${main_port}" "maxPods: 1000" "$(kk_eviction_hard_yaml)"
    cmd=("${KK_KUBELET_BIN}" --config="${rd}/kubelet.yaml" --root-dir="${rd}/root" --cert-dir="${rd}/pki"
      --hostname-override="${NODE}" --node-ip="${NODE_IP}")
  else
    cmd=("${BIN}/minikubelet" --container-runtime-endpoint "${endpoint}" --pod-manifest-path "${rd}/manifests"
      --node-name "${NODE}" --node-ip "${NODE_IP}" --root-dir "${rd}/root" --address 127.0.0.1 --read-only-port "${port}"
      --port "${main_port}" --healthz-port 0 --cgroups-per-qos=false --max-pods 1000 \
      --eviction-hard "${KK_EVICTION_HARD}") # as upstream's configuration here (lib.sh)
  fi
  kk_isolate "${rd}/var-lib-kubelet" "${cmd[@]}"
  AGENT_BIN="${cmd[0]}"
  AGENT_PIDFILE="${rd}/kubelet.pid"
  kk_log "${agent} on ${runtime}, ${n} pods"
  "${BIN}/bench" run --agent "${agent}" --runtime "${runtime}" --n "${n}" \
    --url "http://127.0.0.1:${port}/pods" --cri "${endpoint}" --manifests "${rd}/manifests" \
    --extra "${rd}/extra/bench-extra.yaml" --steady "${STEADY}s" --pidfile "${AGENT_PIDFILE}" \
    --log "${rd}/kubelet.log" --out "${DIR}/results/${runtime}-${n}-${agent}.json" -- "${KK_ISOLATED_CMD[@]}" ||
    { tail -n 20 "${rd}/kubelet.log" >&2; kk_die "${agent} on ${runtime}, ${n} pods: failed; see ${rd}"; }
  stop_agent
  if [[ "${runtime}" == fakecri ]]; then
    stop_fakecri
  else
    "${BIN}/bench" clean --cri "${endpoint}"
  fi
  # Upstream kubelet leaves its pods' volume mounts behind when it stops.
  kk_unmount_under "${rd}"
  if [[ "${agent}" == upstream ]] && grep -q 'strict decoding error' "${rd}/kubelet.log"; then
    grep 'strict decoding error' "${rd}/kubelet.log" >&2
    kk_die "kubelet did not take ${rd}/kubelet.yaml as written"
  fi
}

main() {
  local t0=${SECONDS} n commit load
  kk_unmount_under "${DIR}"
  rm -rf "${DIR}"
  mkdir -p "${BIN}" "${DIR}/results"
  kk_share_dir "${DIR}"
  NODE_IP="$(kk_node_ip)"
  kk_build_upstream kubelet "${KK_KUBELET_BIN}"
  (
    cd "${HACK_DIR}/.."
    go build -o "${BIN}/bench" ./hack/bench
    go build -o "${BIN}/minikubelet" ./examples/minikubelet
    go build -o "${BIN}/fakecri" ./examples/fakecri
  )
  commit="${KK_BENCH_COMMIT:-}"
  if [[ -z "${commit}" ]]; then
    commit="$(cd "${HACK_DIR}/.." && git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    if [[ -n "$(cd "${HACK_DIR}/.." && git status --porcelain --untracked-files=no 2>/dev/null)" ]]; then
      commit+=" (with uncommitted changes)"
    fi
  fi
  read -r load _ </proc/loadavg
  if awk -v l="${load}" -v n="$(nproc)" 'BEGIN { exit !(l > n / 2) }'; then
    kk_log "warning: load average ${load} on $(nproc) cores: other work will disturb the figures"
  fi
  for n in ${SIZES}; do
    one fakecri "${n}" upstream
    one fakecri "${n}" minikubelet
  done
  if [[ "${CTRD_SIZE}" != 0 ]]; then
    if [[ -S "${KK_SOCK}" ]]; then
      CLEAN_CONTAINERD=1
      one containerd "${CTRD_SIZE}" upstream
      one containerd "${CTRD_SIZE}" minikubelet
    else
      kk_log "no containerd at ${KK_SOCK} (hack/containerd-start.sh): the containerd runs are skipped"
    fi
  fi
  {
    printf 'Commit %s, %s, %s cores, %s.\n\n' "${commit}" "$(date -u +%Y-%m-%dT%H:%MZ)" "$(nproc)" \
      "$("${KK_KUBELET_BIN}" --version)"
    "${BIN}/bench" table "${DIR}/results"/*.json
  } >"${DIR}/report.md"
  cat "${DIR}/report.md"
  kk_log "report: ${DIR}/report.md ($((SECONDS - t0))s)"
}

main "$@"

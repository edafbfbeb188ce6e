#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# hack/scale.sh: many kubeletkit nodes in one process (examples/nodefarm, run
# by examples/scalenodes) against the control plane of
# hack/controlplane-start.sh, with pods created through the API server at a
# set rate (docs/scale.md).
#
#   bash hack/controlplane-setup.sh && bash hack/controlplane-start.sh
#   bash hack/scale.sh                       # 50 nodes x 30 pods, CI's short run
#   KK_SCALE_NODES=100 KK_SCALE_PODS_PER_NODE=110 KK_SCALE_PROBES=3 \
#     KK_SCALE_STEADY_SECONDS=120 KK_SCALE_PPROF=1 bash hack/scale.sh   # the benchmark
#
#   1. builds examples/scalenodes into $KK_WORK/scale/bin;
#   2. starts "scalenodes nodes" (KK_SCALE_NODES nodes named
#      $KK_SCALE_PREFIX0000...), its log in $KK_WORK/scale/nodes.log and its
#      PID in $KK_WORK/scale/nodes.pid;
#   3. "scalenodes load": waits until every node is Ready, creates
#      KK_SCALE_PODS_PER_NODE pods per node (spec.nodeName set: the control
#      plane has no scheduler) at KK_SCALE_RATE pods per second, each with
#      KK_SCALE_PROBES exec probes, and prints the pod-startup percentiles
#      (creation to Running and to Ready, watched); it fails when a pod is
#      not Ready within KK_SCALE_TIMEOUT;
#   4. steady state, KK_SCALE_STEADY_SECONDS: the nodes process's CPU
#      (utime+stime from /proc, in cores) and RSS (VmRSS, and VmHWM, its
#      peak), and "scalenodes heartbeat": the age of every node's Lease
#      renewal, sampled every 2s; with KK_SCALE_PPROF=1 a CPU profile of
#      the steady state and a heap profile after it, in $KK_WORK/scale/;
#   5. stops the nodes process (by its PID) and deletes the load's pods,
#      the Nodes and their Leases ("scalenodes clean").
# The figures are in $KK_WORK/scale/report.txt as well.
#
# Environment variables:
#   KK_WORK                  work dir (default /tmp/kubeletkit-e2e); the control
#                            plane's env file is $KK_WORK/controlplane/env
#   KK_SCALE_NODES (50), KK_SCALE_PODS_PER_NODE (30), KK_SCALE_RATE (50),
#   KK_SCALE_PROBES (2), KK_SCALE_TIMEOUT (5m), KK_SCALE_STEADY_SECONDS (30),
#   KK_SCALE_PREFIX (hollow-), KK_SCALE_CRASH_RATIO (0),
#   KK_SCALE_PULL_LATENCY (0s), KK_SCALE_PPROF (0), KK_SCALE_BIN (a scalenodes
#   binary to run instead of building this tree's, to compare commits)
set -euo pipefail
HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "${HACK_DIR}/lib.sh"

NODES="${KK_SCALE_NODES:-50}"
PODS="${KK_SCALE_PODS_PER_NODE:-30}"
RATE="${KK_SCALE_RATE:-50}"
PROBES="${KK_SCALE_PROBES:-2}"
TIMEOUT="${KK_SCALE_TIMEOUT:-5m}"
STEADY="${KK_SCALE_STEADY_SECONDS:-30}"
PREFIX="${KK_SCALE_PREFIX:-hollow-}"
CRASH="${KK_SCALE_CRASH_RATIO:-0}"
PULL="${KK_SCALE_PULL_LATENCY:-0s}"
PPROF="${KK_SCALE_PPROF:-0}"
DIR="${KK_WORK}/scale"
BIN="${DIR}/bin/scalenodes"
PIDFILE="${DIR}/nodes.pid"
REPORT="${DIR}/report.txt"

CP_ENV="${KK_WORK}/controlplane/env"
[[ -f "${CP_ENV}" ]] || kk_die "no control plane: ${CP_ENV} is missing (run hack/controlplane-start.sh)"
# shellcheck disable=SC1090
source "${CP_ENV}"

mkdir -p "${DIR}/bin"
rm -rf "${DIR}/root"
: >"${REPORT}"
report() { printf '%s\n' "$*" | tee -a "${REPORT}"; }

if [[ -n "${KK_SCALE_BIN:-}" ]]; then
  cp "${KK_SCALE_BIN}" "${BIN}"
else
  kk_log "building examples/scalenodes"
  (cd "${HACK_DIR}/.." && go build -o "${BIN}" ./examples/scalenodes)
fi

nodes_pid=""
stop_nodes() {
  if [[ -n "${nodes_pid}" ]] && kk_pid_alive "${nodes_pid}"; then
    kk_stop_pid "scalenodes nodes" "${nodes_pid}" 30 || true
    wait "${nodes_pid}" 2>/dev/null || true
  fi
  nodes_pid=""
  rm -f "${PIDFILE}"
}
cleanup() {
  local status=$?
  stop_nodes
  "${BIN}" clean --kubeconfig "${KK_KUBECONFIG}" --node-name-prefix "${PREFIX}" || status=1
  exit "${status}"
}
trap cleanup EXIT

pprof_args=()
pprof_port=""
if [[ "${PPROF}" == 1 ]]; then
  pprof_port="$(kk_free_port)"
  pprof_args=(--pprof-address "127.0.0.1:${pprof_port}")
fi
kk_log "starting ${NODES} nodes"
"${BIN}" nodes --kubeconfig "${KK_KUBECONFIG}" --nodes "${NODES}" --node-name-prefix "${PREFIX}" \
  --root-dir "${DIR}/root" --crash-ratio "${CRASH}" --pull-latency "${PULL}" "${pprof_args[@]}" \
  >"${DIR}/nodes.log" 2>&1 &
nodes_pid=$!
echo "${nodes_pid}" >"${PIDFILE}"

report "scale: ${NODES} nodes x ${PODS} pods, ${PROBES} probes per pod, ${RATE} pods/s, crash ratio ${CRASH}, pull latency ${PULL} ($(nproc) CPUs, commit $(git -C "${HACK_DIR}/.." rev-parse --short HEAD 2>/dev/null || echo unknown))"
start=${SECONDS}
"${BIN}" load --kubeconfig "${KK_KUBECONFIG}" --nodes "${NODES}" --node-name-prefix "${PREFIX}" \
  --pods-per-node "${PODS}" --rate "${RATE}" --probes "${PROBES}" --timeout "${TIMEOUT}" | tee -a "${REPORT}"
kk_pid_alive "${nodes_pid}" || { tail -50 "${DIR}/nodes.log"; kk_die "the nodes process ended"; }
report "scale: load done in $((SECONDS - start))s"

# cpu_ticks PID: utime+stime of PID, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
status_kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }

if ((STEADY > 0)); then
  kk_log "steady state, ${STEADY}s"
  hz="$(getconf CLK_TCK)"
  t0="$(cpu_ticks "${nodes_pid}")"
  w0="$(date +%s.%N)"
  prof_pid=""
  if [[ -n "${pprof_port}" ]]; then
    curl -fsS -o "${DIR}/cpu.pprof" "http://127.0.0.1:${pprof_port}/debug/pprof/profile?seconds=${STEADY}" &
    prof_pid=$!
  fi
  "${BIN}" heartbeat --kubeconfig "${KK_KUBECONFIG}" --nodes "${NODES}" --node-name-prefix "${PREFIX}" \
    --for "${STEADY}s" | tee -a "${REPORT}"
  t1="$(cpu_ticks "${nodes_pid}")"
  w1="$(date +%s.%N)"
  [[ -z "${prof_pid}" ]] || wait "${prof_pid}"
  report "$(awk -v t0="${t0}" -v t1="${t1}" -v w0="${w0}" -v w1="${w1}" -v hz="${hz}" -v n="${NODES}" \
    'BEGIN { c = (t1 - t0) / hz / (w1 - w0); printf "scale: steady-state CPU of the nodes process %.3f cores (%.4f per node) over %.0fs", c, c / n, w1 - w0 }')"
fi
rss="$(status_kb "${nodes_pid}" VmRSS)"
hwm="$(status_kb "${nodes_pid}" VmHWM)"
threads="$(status_kb "${nodes_pid}" Threads)"
report "$(awk -v r="${rss}" -v h="${hwm}" -v n="${NODES}" -v t="${threads}" \
  'BEGIN { printf "scale: RSS of the nodes process %.0f MiB (%.1f MiB per node), peak %.0f MiB, %d threads", r / 1024, r / 1024 / n, h / 1024, t }')"
if [[ -n "${pprof_port}" ]]; then
  curl -fsS -o "${DIR}/heap.pprof" "http://127.0.0.1:${pprof_port}/debug/pprof/heap"
  curl -fsS -o "${DIR}/goroutines.txt" "http://127.0.0.1:${pprof_port}/debug/pprof/goroutine?debug=1"
  report "scale: $(head -1 "${DIR}/goroutines.txt"); profiles in ${DIR}/cpu.pprof, heap.pprof"
fi

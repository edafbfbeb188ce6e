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
#   5. the farm's statuses against a single minikubelet's: starts
#      examples/minikubelet on its embedded fake runtime, joined as the
#      control plane's node identity ($KK_NODE_NAME, kk-node; no threshold
#      eviction, so that the host's disk cannot refuse its pods), gives it
#      a copy of every pod of the farm's first node ("scalenodes twin":
#      the same names and specs, in namespace scalenodes-twin), and once
#      they are Ready records both nodes' pods through the API server at
#      the same time for 5s (hack/fidelity record) and compares them
#      field by field (hack/fidelity compare, the single minikubelet on
#      the left): any difference but timing fails the run. The report is
#      $KK_WORK/scale/compare.txt. Skipped with KK_SCALE_COMPARE=0, and
#      with a crash ratio above 0 (the farm's crashes are its script's);
#   6. stops minikubelet and the nodes process (by their PIDs) and deletes
#      the single node's pods, the load's pods, the Nodes and their Leases
#      ("fidelity clean", "scalenodes clean").
# The figures are in $KK_WORK/scale/report.txt as well.
#
# Environment variables:
#   KK_WORK                  work dir (default /tmp/kubeletkit-e2e); the control
#                            plane's env file is $KK_WORK/controlplane/env
#   KK_SCALE_NODES (50), KK_SCALE_PODS_PER_NODE (30), KK_SCALE_RATE (50),
#   KK_SCALE_PROBES (2), KK_SCALE_TIMEOUT (5m), KK_SCALE_STEADY_SECONDS (30),
#   KK_SCALE_PREFIX (hollow-), KK_SCALE_CRASH_RATIO (0),
#   KK_SCALE_PULL_LATENCY (0s), KK_SCALE_PPROF (0), KK_SCALE_BIN (a scalenodes
#   binary to run instead of building this tree's, to compare commits; one
#   older than "scalenodes twin" needs KK_SCALE_COMPARE=0),
#   KK_SCALE_COMPARE (1)
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
COMPARE="${KK_SCALE_COMPARE:-1}"
DIR="${KK_WORK}/scale"
BIN="${DIR}/bin/scalenodes"
MINI="${DIR}/bin/minikubelet"
FIDELITY="${DIR}/bin/fidelity"
TWIN_NS=scalenodes-twin
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
if [[ "${COMPARE}" == 1 && "${CRASH}" != 0 ]]; then
  kk_log "crash ratio ${CRASH}: the farm's crashes are its script's, no comparison with a single minikubelet"
  COMPARE=0
fi
if [[ "${COMPARE}" == 1 ]]; then
  kk_log "building examples/minikubelet and hack/fidelity"
  (cd "${HACK_DIR}/.." && go build -o "${MINI}" ./examples/minikubelet && go build -o "${FIDELITY}" ./hack/fidelity)
fi
api=(--server "${KK_APISERVER_URL}" --token "${KK_APISERVER_TOKEN}" --ca "${KK_APISERVER_CA}")

nodes_pid=""
stop_nodes() {
  if [[ -n "${nodes_pid}" ]] && kk_pid_alive "${nodes_pid}"; then
    kk_stop_pid "scalenodes nodes" "${nodes_pid}" 30 || true
    wait "${nodes_pid}" 2>/dev/null || true
  fi
  nodes_pid=""
  rm -f "${PIDFILE}"
}
single_pid=""
stop_single() {
  if [[ -n "${single_pid}" ]] && kk_pid_alive "${single_pid}"; then
    kk_stop_pid minikubelet "${single_pid}" 20 || true
    wait "${single_pid}" 2>/dev/null || true
  fi
  single_pid=""
}
cleanup() {
  local status=$?
  if [[ "${COMPARE}" == 1 ]]; then
    stop_single
    "${FIDELITY}" clean "${api[@]}" --node "${KK_NODE_NAME}" || status=1
    kk_unmount_under "${DIR}/single"
  fi
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

# The farm's statuses against a single minikubelet's (step 5), after the
# figures: the second agent's CPU stays out of them.
if [[ "${COMPARE}" == 1 ]]; then
  kk_log "a single minikubelet (${KK_NODE_NAME}) with the pods of ${PREFIX}0000"
  "${FIDELITY}" clean "${api[@]}" --node "${KK_NODE_NAME}"
  kk_unmount_under "${DIR}/single"
  rm -rf "${DIR}/single"
  mkdir -p "${DIR}/single"
  # The minikubelet holds none of this script's descriptors (KK_CLOSE_FDS):
  # not a lock taken around it.
  bash -c 'eval "${KK_CLOSE_FDS}"; exec "$@"' kk-single "${MINI}" --kubeconfig "${KK_NODE_KUBECONFIG}" \
    --node-name "${KK_NODE_NAME}" --root-dir "${DIR}/single/root" --address 127.0.0.1 --port 0 --healthz-port 0 \
    --eviction-hard "" >"${DIR}/single.log" 2>&1 </dev/null &
  single_pid=$!
  "${BIN}" twin --kubeconfig "${KK_KUBECONFIG}" --from "${PREFIX}0000" --to "${KK_NODE_NAME}" \
    --namespace "${TWIN_NS}" | tee -a "${REPORT}" ||
    { tail -30 "${DIR}/single.log"; kk_die "the single minikubelet's pods are not Ready; see ${DIR}/single.log"; }
  "${FIDELITY}" record "${api[@]}" --node "${PREFIX}0000" --duration 5s --out "${DIR}/farm.json" &
  rec_pid=$!
  "${FIDELITY}" record "${api[@]}" --node "${KK_NODE_NAME}" --duration 5s --out "${DIR}/single.json"
  wait "${rec_pid}"
  kk_pid_alive "${single_pid}" || { tail -30 "${DIR}/single.log"; kk_die "the single minikubelet ended"; }
  same=0
  "${FIDELITY}" compare "${DIR}/single.json" "${DIR}/farm.json" >"${DIR}/compare.txt" || same=$?
  # The per-pod lines come before the timelines: "NAME: same", "NAME: same
  # but for timing", "NAME: N differences", "NAME: only in FILE".
  summary="$(sed '/^timelines/q' "${DIR}/compare.txt" | awk -F': ' '/^[^ ].*: / && !/^last samples/ {
      if ($2 == "same") s++; else if ($2 == "same but for timing") t++; else d++ }
    END { printf "%d same, %d same but for timing, %d differ", s, t, d }')"
  report "scale: statuses of ${PREFIX}0000's pods against a single minikubelet's (hack/fidelity compare): ${summary}; ${DIR}/compare.txt"
  if ((same != 0)); then
    sed '/^timelines/q' "${DIR}/compare.txt" >&2
    kk_die "the farm's statuses differ from a single minikubelet's (compare exited ${same})"
  fi
fi

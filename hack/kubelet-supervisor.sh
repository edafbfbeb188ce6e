#!/usr/bin/env bash
# hack/kubelet-supervisor.sh DIR LOG -- KUBELET [ARGS...]: runs a kubelet and
# stops or restarts it on request, the conformance harness's stand-in for the
# systemd unit upstream's node e2e suite restarts (hack/conformance.sh).
#
# It starts the kubelet at once (setsid, output appended to LOG, its PID in
# DIR/kubelet.pid) and then serves requests, one a line on the FIFO DIR/ctl:
#   status REPLY   writes "running PID" or "stopped" to the file REPLY
#   stop REPLY     SIGTERM to the kubelet (SIGKILL after 30s), which stays
#                  stopped; writes "ok"
#   restart REPLY  stops the kubelet if it runs and starts it again with the
#                  same command line, so that it reads its configuration file
#                  again; writes "ok"
# hack/conformance-shims/systemctl is the client. A kubelet that exits on its
# own is not started again (a unit without Restart=, as the suite's own
# transient unit). SIGTERM or SIGINT stops the kubelet, then the supervisor.
# It touches nothing but the process it started, by PID.
set -uo pipefail
DIR="$1"
LOG="$2"
shift 2
[[ "${1:-}" == -- ]] && shift
(($#)) || { echo "usage: $0 DIR LOG -- KUBELET [ARGS...]" >&2; exit 2; }
CMD=("$@")
PID=""

say() { printf '%s supervisor: %s\n' "$(date -u +%H:%M:%S)" "$*"; }

# alive: the kubelet runs (not a zombie).
alive() {
  local state
  [[ -n "${PID}" && -r "/proc/${PID}/stat" ]] || return 1
  state="$(sed -E 's/^[0-9]+ \(.*\) (.).*/\1/' "/proc/${PID}/stat" 2>/dev/null)" || return 1
  [[ "${state}" != Z && "${state}" != X ]]
}

start() {
  setsid "${CMD[@]}" >>"${LOG}" 2>&1 </dev/null &
  PID=$!
  printf '%s\n' "${PID}" >"${DIR}/kubelet.pid"
  say "started the kubelet (pid ${PID})"
}

stop() {
  [[ -n "${PID}" ]] || return 0
  if alive; then
    say "stopping the kubelet (pid ${PID})"
    kill -TERM "${PID}" 2>/dev/null || true
    local deadline=$((SECONDS + 30))
    while alive && ((SECONDS < deadline)); do sleep 0.1; done
    if alive; then
      say "the kubelet did not exit within 30s: SIGKILL"
      kill -KILL "${PID}" 2>/dev/null || true
    fi
  fi
  wait "${PID}" 2>/dev/null
  say "the kubelet (pid ${PID}) exited $?"
  PID=""
}

trap 'stop; exit 0' TERM INT

rm -f "${DIR}/ctl"
mkfifo -m 600 "${DIR}/ctl"
# Read and write: the FIFO never reads end-of-file between clients.
exec 3<>"${DIR}/ctl"
start
while :; do
  # A timeout, so that a signal's trap runs within a second.
  read -r -t 1 -u 3 req reply || continue
  case "${req}" in
  status) if alive; then answer="running ${PID}"; else answer=stopped; fi ;;
  stop) stop && answer=ok ;;
  restart) stop && start && answer=ok ;;
  *) answer="error: unknown request ${req}" ;;
  esac
  say "${req}: ${answer}"
  if [[ -n "${reply:-}" ]]; then
    printf '%s\n' "${answer}" >"${reply}.tmp" && mv "${reply}.tmp" "${reply}"
  fi
done

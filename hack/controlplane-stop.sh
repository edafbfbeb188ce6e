#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# hack/controlplane-stop.sh: stop the etcd and kube-apiserver (and the
# kube-controller-manager and kube-scheduler of KK_CP_CLUSTER=1, and the
# metrics-server of KK_METRICS_SERVER=1 or --start-metrics-server) started by
# hack/controlplane-start.sh and remove their state. Safe to run at any time
# (when nothing runs it only removes leftovers). It:
#   1. stops metrics-server, kube-scheduler, kube-controller-manager,
#      kube-apiserver, then etcd: the PID in $KK_WORK/kube-apiserver.pid
#      or $KK_WORK/etcd.pid, only if that process really is our binary with
#      our cert dir / data dir; any other process with such a command line
#      (pid file lost) too. SIGTERM, wait up to $KK_STOP_TIMEOUT seconds
#      (2s for the API server when etcd is already gone: its graceful
#      shutdown then only hangs), then SIGKILL;
#   2. removes $KK_WORK/controlplane (etcd data, keys, tokens, certs,
#      kubeconfigs, env file) and the pid files. It keeps the logs and the
#      cached binary in $KK_WORK/bin.
#
# Environment variables:
#   KK_WORK          work dir (default /tmp/kubeletkit-e2e)
#   KK_STOP_TIMEOUT  seconds to wait after SIGTERM before SIGKILL (default 15)
set -euo pipefail
HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "${HACK_DIR}/lib.sh"

STOP_TIMEOUT="${KK_STOP_TIMEOUT:-15}"

# stop_daemon NAME PIDFILE CHECK COMM [TIMEOUT]: stop the daemon in PIDFILE
# if CHECK accepts it, then any other process named COMM that CHECK accepts.
stop_daemon() {
  local name="$1" pidfile="$2" check="$3" comm="$4" timeout="${5:-${STOP_TIMEOUT}}" pid
  pid="$(kk_pidfile_pid "${pidfile}" "${check}")"
  if [[ -n "${pid}" ]]; then
    kk_stop_pid "${name}" "${pid}" "${timeout}" || exit 1
  elif [[ -f "${pidfile}" ]]; then
    kk_log "${name} from ${pidfile} is not running"
  fi
  for pid in $(kk_find_pids "${check}" "${comm}"); do
    kk_log "found ${name} with our command line but not in ${pidfile}: pid ${pid}"
    kk_stop_pid "${name}" "${pid}" "${timeout}" || exit 1
  done
  rm -f "${pidfile}"
}

main() {
  local t0=${SECONDS}
  [[ -d "${KK_WORK}" ]] || return 0
  local api_timeout="${STOP_TIMEOUT}"
  # Without etcd the API server's graceful shutdown only hangs on its
  # storage: give it 2s.
  if [[ -z "$(kk_pidfile_pid "${KK_ETCD_PIDFILE}" kk_is_our_etcd)" && -z "$(kk_find_pids kk_is_our_etcd etcd)" ]]; then
    api_timeout=$((STOP_TIMEOUT < 2 ? STOP_TIMEOUT : 2))
  fi
  stop_daemon metrics-server "${KK_MS_PIDFILE}" kk_is_our_metrics_server metrics-server 5
  stop_daemon kube-scheduler "${KK_SCHEDULER_PIDFILE}" kk_is_our_scheduler kube-scheduler-
  stop_daemon kube-controller-manager "${KK_KCM_PIDFILE}" kk_is_our_kcm kube-controller
  stop_daemon kube-apiserver "${KK_APISERVER_PIDFILE}" kk_is_our_apiserver kube-apiserver- "${api_timeout}"
  stop_daemon etcd "${KK_ETCD_PIDFILE}" kk_is_our_etcd etcd
  if [[ -d "${KK_CP_DIR}" ]]; then
    rm -rf --one-file-system "${KK_CP_DIR}"
  fi
  kk_log "controlplane stop: done in $((SECONDS - t0))s (no control plane daemon of ${KK_WORK} left)"
}

main "$@"

#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# hack/systemd-stop.sh: stop the private systemd of hack/systemd-start.sh and
# remove its cgroups. Safe to run when nothing runs. It kills exactly the
# PID in $KK_WORK/systemd/pid, and only while that process runs systemd in
# the cgroup start made: SIGKILL to the PID 1 of a PID namespace ends every
# process in it. Then it removes the cgroups listed in
# $KK_WORK/systemd/cgroups, deepest first (retrying while the kernel
# releases them), and the pid, env and cgroups files.
#
# Environment variables:
#   KK_WORK   work dir (default /tmp/kubeletkit-e2e)
set -euo pipefail
HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "${HACK_DIR}/lib.sh"

[[ "$(id -u)" == 0 ]] || kk_die "must run as root"
SD_DIR="${KK_WORK}/systemd"

pid=""
[[ -f "${SD_DIR}/pid" ]] && pid="$(tr -dc '0-9' <"${SD_DIR}/pid")"
if [[ -n "${pid}" ]] && kk_pid_alive "${pid}"; then
  name="kk-systemd-$(printf '%s' "${KK_WORK}" | md5sum | cut -c1-8)"
  if [[ "$(kk_cmdline "${pid}")" == "/usr/lib/systemd/systemd "* ]] && grep -q "/${name}/" "/proc/${pid}/cgroup"; then
    kk_log "stopping the private systemd (pid ${pid})"
    kill -KILL "${pid}"
    deadline=$((SECONDS + 10))
    while kk_pid_alive "${pid}" && ((SECONDS < deadline)); do sleep 0.1; done
    kk_pid_alive "${pid}" && kk_die "systemd (pid ${pid}) survived SIGKILL"
  else
    kk_log "pid ${pid} is not our systemd: left alone"
  fi
fi

if [[ -f "${SD_DIR}/cgroups" ]]; then
  left=""
  for _ in $(seq 50); do
    left=""
    while read -r dir; do
      [[ -d "${dir}" ]] || continue
      find "${dir}" -depth -type d -exec rmdir {} \; 2>/dev/null || true
      [[ -d "${dir}" ]] && left+=" ${dir}"
    done <"${SD_DIR}/cgroups"
    [[ -z "${left}" ]] && break
    sleep 0.1
  done
  [[ -z "${left}" ]] || kk_die "cgroups left:${left}"
fi
rm -f "${SD_DIR}/pid" "${SD_DIR}/env" "${SD_DIR}/cgroups"

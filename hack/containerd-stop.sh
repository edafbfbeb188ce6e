#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# hack/containerd-stop.sh: stop the private containerd started by
# hack/containerd-start.sh and clean up after it, so start can run again.
# Safe to run when nothing is running (it then only cleans leftovers). It:
#   1. removes all CRI pods through crictl while containerd still answers
#      (stops containers, tears down their network namespaces);
#   2. stops exactly the containerd named in $KK_WORK/containerd.pid (only if
#      that PID still is a containerd using our config): SIGTERM, wait up to
#      $KK_STOP_TIMEOUT seconds, then SIGKILL;
#   3. force-deletes containers still known to our runc root
#      ($KK_WORK/run/runc) and kills leftover containerd-shim processes whose
#      command line names our socket (with everything they spawned), and
#      removes their sockets from /run/containerd/s;
#   4. unmounts everything mounted under $KK_WORK, deepest first, falling
#      back to a lazy unmount;
#   5. removes the empty /k8s.io cgroups pods leave and our CNI bridge
#      (kkcni0, or $KK_CNI_BRIDGE_NAME as containerd-start.sh was given it)
#      when nothing is attached to it;
#   6. removes containerd's state dir and (unless KK_KEEP_ROOT=1) its root dir,
#      so the next start begins from a clean store. Built binaries and image
#      archives ($KK_WORK/bin, $KK_WORK/images, $KK_WORK/build) are kept.
#
# Environment variables:
#   KK_WORK           work dir (default /tmp/kubeletkit-e2e)
#   KK_STOP_TIMEOUT   seconds to wait after SIGTERM before SIGKILL (default 15)
#   KK_KEEP_ROOT=1    keep containerd's root dir (content store, metadata)
#   KK_CNI_BRIDGE_NAME  our CNI bridge, when containerd-start.sh was given one
set -euo pipefail
HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "${HACK_DIR}/lib.sh"

STOP_TIMEOUT="${KK_STOP_TIMEOUT:-15}"
CNI_BRIDGE="${KK_CNI_BRIDGE_NAME:-${KK_CNI_BRIDGE}}"

[[ "$(id -u)" == 0 ]] || kk_die "must run as root"

remove_pods() {
  [[ -S "${KK_SOCK}" && -x "${KK_BIN}/crictl" ]] || return 0
  kk_crictl_cmd "${KK_ENDPOINT}"
  local crictl=("${KK_CRICTL_CMD[@]}" --timeout 20s)
  if timeout 5 "${crictl[@]}" version >/dev/null 2>&1; then
    if [[ -n "$(timeout 20 "${crictl[@]}" pods -q 2>/dev/null)" ]]; then
      kk_log "removing all CRI pods"
      timeout 60 "${crictl[@]}" rmp -fa >/dev/null 2>&1 || kk_log "warning: crictl rmp -fa failed"
    fi
  fi
}

stop_containerd() {
  local pid
  pid="$(kk_our_containerd_pid)"
  if [[ -z "${pid}" ]]; then
    [[ -f "${KK_PIDFILE}" ]] && kk_log "containerd from ${KK_PIDFILE} is not running"
    # A containerd running with our config but without a pid file was still
    # started by containerd-start.sh (e.g. the pid file was deleted).
    for pid in $(kk_find_our_containerd); do
      kk_log "found containerd with our config but no pid file: pid ${pid}"
      kk_stop_pid containerd "${pid}" "${STOP_TIMEOUT}" || true
    done
    rm -f "${KK_PIDFILE}"
    return 0
  fi
  kk_stop_pid containerd "${pid}" "${STOP_TIMEOUT}" || true
  rm -f "${KK_PIDFILE}"
}

delete_runc_containers() {
  local root id
  for root in "${KK_RUN}"/runc/*; do
    [[ -d "${root}" ]] || continue
    while IFS= read -r id; do
      [[ -n "${id}" ]] || continue
      kk_log "runc delete --force ${id}"
      timeout 20 runc --root "${root}" delete --force "${id}" >/dev/null 2>&1 || true
    done < <(timeout 20 runc --root "${root}" list -q 2>/dev/null || true)
  done
}

# descendants PID: print all descendants of PID, children before parents' siblings.
descendants() {
  local parent="$1" p ppid
  for p in /proc/[0-9]*; do
    p="${p#/proc/}"
    ppid="$(awk '{sub(/^.*\) /, ""); print $2}' "/proc/${p}/stat" 2>/dev/null || true)"
    if [[ "${ppid}" == "${parent}" ]]; then
      descendants "${p}"
      printf '%s\n' "${p}"
    fi
  done
}

kill_shims() {
  local p cmdline ns id pids=() kids
  for p in /proc/[0-9]*; do
    p="${p#/proc/}"
    cmdline="$(tr '\0' ' ' 2>/dev/null <"/proc/${p}/cmdline" || true)"
    [[ "${cmdline}" == *containerd-shim* ]] || continue
    # Shims are started as: containerd-shim-runc-v2 -namespace NS -id ID -address SOCK
    [[ " ${cmdline} " == *" -address ${KK_SOCK} "* ]] || continue
    pids+=("${p}")
    ns="$(sed -E 's/.* -namespace ([^ ]+).*/\1/' <<<"${cmdline}")"
    id="$(sed -E 's/.* -id ([^ ]+).*/\1/' <<<"${cmdline}")"
    # containerd 1.6 puts the shim socket at /run/containerd/s/sha256(<address>/<ns>/<id>).
    rm -f "/run/containerd/s/$(printf '%s' "${KK_SOCK}/${ns}/${id}" | sha256sum | cut -d' ' -f1)"
  done
  ((${#pids[@]})) || return 0
  kk_log "killing ${#pids[@]} leftover shim(s) and their processes: ${pids[*]}"
  for p in "${pids[@]}"; do
    kids="$(descendants "${p}")"
    # shellcheck disable=SC2086 # word splitting of the PID list is intended
    [[ -z "${kids}" ]] || kill -KILL ${kids} 2>/dev/null || true
    kill -KILL "${p}" 2>/dev/null || true
  done
  local deadline=$((SECONDS + 5))
  for p in "${pids[@]}"; do
    while kk_pid_alive "${p}" && ((SECONDS < deadline)); do sleep 0.1; done
  done
}

# unmount_all: unmount everything under $KK_WORK, deepest first.
unmount_all() {
  kk_unmount_under "${KK_WORK}"
}

# cleanup_host: remove what pods leave on the host outside $KK_WORK once no
# container is left: the (empty) /k8s.io cgroups that containerd's cgroupfs
# driver creates for pods without a cgroup parent, and our CNI bridge when
# nothing is attached to it. rmdir only removes empty cgroups, so a cgroup
# still in use (by anyone) is left alone. The portmap plugin's generic
# CNI-HOSTPORT-* iptables chains are shared with other CNI users and kept.
cleanup_host() {
  local d
  for d in /sys/fs/cgroup/*/k8s.io; do
    [[ -d "${d}" ]] || continue
    find "${d}" -depth -mindepth 1 -type d -exec rmdir {} + 2>/dev/null || true
    rmdir "${d}" 2>/dev/null || true
  done
  if ip link show "${CNI_BRIDGE}" >/dev/null 2>&1 &&
    [[ -z "$(ip -o link show master "${CNI_BRIDGE}" 2>/dev/null)" ]]; then
    ip link delete "${CNI_BRIDGE}" 2>/dev/null || true
  fi
}

remove_state() {
  if [[ -n "$(kk_mounts_under "${KK_WORK}")" ]]; then
    kk_log "warning: mounts remain under ${KK_WORK}; keeping state dirs"
    return 0
  fi
  rm -rf --one-file-system "${KK_RUN}"
  [[ "${KK_KEEP_ROOT:-0}" == 1 ]] || rm -rf --one-file-system "${KK_CTRD_DIR}/root"
  rm -f "${KK_WORK}/env"
}

main() {
  local t0=${SECONDS}
  [[ -d "${KK_WORK}" ]] || return 0
  remove_pods
  stop_containerd
  delete_runc_containers
  kill_shims
  unmount_all
  cleanup_host
  remove_state
  kk_log "stop: done in $((SECONDS - t0))s (${KK_WORK}: no containerd, shims or mounts left)"
}

main "$@"

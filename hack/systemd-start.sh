#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# hack/systemd-start.sh: run a private systemd, isolated from the host, for
# the systemd cgroup driver's test (cgroups, -tags systemd). The machine's
# PID 1 need not be systemd; its cgroups must be v1 or hybrid (the test
# reads v1 files). It:
#   1. installs Debian's systemd package when /usr/lib/systemd/systemd is
#      missing (apt-get; never when KK_SKIP_APT=1);
#   2. makes a cgroup of its own, kk-systemd-<hash of $KK_WORK>, under this
#      shell's cgroup in every hierarchy (cpuset with its parent's CPUs and
#      memory nodes), and moves the starter into it;
#   3. starts systemd there as PID 1 of new PID, mount, cgroup, UTS and IPC
#      namespaces (unshare(1)): the cgroup namespace makes that cgroup
#      systemd's root, so every slice it creates stays below it; /run is a
#      tmpfs of its own (its private bus, /run/systemd/private, lives
#      there), /proc is the new PID namespace's, the cgroup hierarchies are
#      mounted again from inside the cgroup namespace. systemd starts with
#      only a target of ours (SYSTEMD_UNIT_PATH): no services, no journal;
#   4. waits up to $KK_START_TIMEOUT seconds until systemctl, in those
#      namespaces, reports the system running.
# It writes $KK_WORK/systemd/pid (systemd's PID on the host), cgroups (the
# directories it made), systemd.log, and env (KK_SYSTEMD_PID). Processes
# that talk to this systemd must run in its namespaces (its D-Bus server
# drops a peer whose PID it cannot see): nsenter -t PID -m -p.
# hack/systemd-stop.sh undoes it all. Nothing outside $KK_WORK and that
# cgroup is touched: not the host's /run, not its systemd (if any).
#
# Environment variables:
#   KK_WORK            work dir (default /tmp/kubeletkit-e2e)
#   KK_SYSTEMD_CGROUPS hybrid (default: the machine's v1 hierarchies and
#                      the hybrid unified one, as mounted here) or unified
#                      (only the unified hierarchy, mounted at
#                      /sys/fs/cgroup: systemd runs in v2 mode, with what
#                      controllers the kernel leaves to v2)
#   KK_START_TIMEOUT   seconds to wait for systemd (default 30)
#   KK_SKIP_APT=1      never run apt-get
set -euo pipefail
HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "${HACK_DIR}/lib.sh"

[[ "$(id -u)" == 0 ]] || kk_die "must run as root"
SD_DIR="${KK_WORK}/systemd"
START_TIMEOUT="${KK_START_TIMEOUT:-30}"
SYSTEMD=/usr/lib/systemd/systemd

if [[ -f "${SD_DIR}/pid" ]]; then
  kk_log "a private systemd may be running: stopping it first"
  bash "${HACK_DIR}/systemd-stop.sh"
fi
if [[ -e /sys/fs/cgroup/cgroup.controllers ]]; then
  kk_die "this machine has cgroup v2 only; hack/systemd-start.sh (and the test) need cgroup v1 or hybrid"
fi
if [[ ! -x "${SYSTEMD}" ]]; then
  [[ "${KK_SKIP_APT:-}" != 1 ]] || kk_die "${SYSTEMD} is missing and KK_SKIP_APT=1"
  kk_log "packages: apt-get install systemd"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends systemd
fi
mkdir -p "${SD_DIR}/units"
rm -f "${SD_DIR}/cgroups" "${SD_DIR}/env"
printf '[Unit]\nDescription=kubeletkit test systemd\n' >"${SD_DIR}/units/kubeletkit.target"

name="kk-systemd-$(printf '%s' "${KK_WORK}" | md5sum | cut -c1-8)"

# 2. A cgroup of our own in every hierarchy, under this shell's.
while IFS=: read -r _ ctrl path; do
  if [[ -z "${ctrl}" ]]; then
    base=/sys/fs/cgroup/unified
  else
    base="/sys/fs/cgroup/${ctrl#name=}"
  fi
  if [[ ! -d "${base}" ]]; then
    kk_log "the ${ctrl:-unified} hierarchy is not under /sys/fs/cgroup: systemd will not see it"
    continue
  fi
  dir="${base}${path%/}/${name}"
  mkdir -p "${dir}"
  printf '%s\n' "${dir}" >>"${SD_DIR}/cgroups"
  if [[ -f "${dir}/cpuset.cpus" && -z "$(cat "${dir}/cpuset.cpus")" ]]; then
    cat "${dir}/../cpuset.cpus" >"${dir}/cpuset.cpus"
    cat "${dir}/../cpuset.mems" >"${dir}/cpuset.mems"
  fi
done </proc/self/cgroup

# 3. The hierarchies as mounted here (mount point, options), for the inner
# mounts; the symlinks (cpu -> cpu,cpuacct) as they are.
mounts=""
while read -r _ mp fstype opts _; do
  [[ "${mp}" == /sys/fs/cgroup/* ]] || continue
  case "${fstype}" in
  cgroup)
    opts="$(tr ',' '\n' <<<"${opts}" | grep -v -E '^(rw|ro|relatime|nosuid|nodev|noexec|clone_children)$' | paste -sd, -)"
    mounts+="mkdir -p ${mp}; mount -t cgroup -o ${opts} cgroup ${mp}; "
    ;;
  cgroup2) mounts+="mkdir -p ${mp}; mount -t cgroup2 cgroup2 ${mp}; " ;;
  esac
done </proc/self/mounts
links=""
for l in /sys/fs/cgroup/*; do
  [[ -L "${l}" ]] && links+="ln -s $(readlink "${l}") ${l}; "
done

cgroupfs="mount -t tmpfs -o mode=755 tmpfs /sys/fs/cgroup; ${mounts}${links}"
if [[ "${KK_SYSTEMD_CGROUPS:-hybrid}" == unified ]]; then
  [[ -e /sys/fs/cgroup/unified/cgroup.controllers ]] || kk_die "KK_SYSTEMD_CGROUPS=unified needs the hybrid unified hierarchy at /sys/fs/cgroup/unified"
  cgroupfs="mount -t cgroup2 cgroup2 /sys/fs/cgroup"
fi

# shellcheck disable=SC2016 # expanded by the inner shell
inner='set -e
mount --make-rprivate /
mount -t proc proc /proc
mount -t tmpfs -o mode=755 tmpfs /run
'"${cgroupfs}"'
eval "${KK_CLOSE_FDS}"
exec env -i container=kubeletkit SYSTEMD_UNIT_PATH="$1" '"${SYSTEMD}"' --unit=kubeletkit.target --log-target=console'

(
  while read -r dir; do
    printf '%s\n' "${BASHPID}" >"${dir}/cgroup.procs"
  done <"${SD_DIR}/cgroups"
  # unshare waits for systemd for as long as it runs: it keeps none of this
  # script's descriptors (a flock(1) lock held by whoever started us, say).
  for fd in $(ls "/proc/${BASHPID}/fd"); do ((fd > 2)) && eval "exec ${fd}>&-"; done
  exec setsid unshare --pid --mount --cgroup --uts --ipc --fork --propagation private \
    bash -c "${inner}" kk-systemd "${SD_DIR}/units"
) >"${SD_DIR}/systemd.log" 2>&1 </dev/null &
starter=$!

# systemd is the child of unshare (the starter).
pid=""
deadline=$((SECONDS + START_TIMEOUT))
while ((SECONDS < deadline)); do
  kk_pid_alive "${starter}" || { cat "${SD_DIR}/systemd.log" >&2; kk_die "systemd's namespaces could not be set up"; }
  # Its child, or its grandchild should setsid(1) have forked.
  for c in $(cat "/proc/${starter}/task/${starter}/children" 2>/dev/null || true); do
    for p in "${c}" $(cat "/proc/${c}/task/${c}/children" 2>/dev/null || true); do
      [[ "$(kk_cmdline "${p}")" == "${SYSTEMD} "* ]] && pid="${p}"
    done
  done
  [[ -n "${pid}" ]] && break
  sleep 0.1
done
[[ -n "${pid}" ]] || { cat "${SD_DIR}/systemd.log" >&2; kk_die "systemd did not start within ${START_TIMEOUT}s"; }
printf '%s\n' "${pid}" >"${SD_DIR}/pid"

# 4. Running?
state=""
while ((SECONDS < deadline)); do
  kk_pid_alive "${pid}" || break
  state="$(nsenter -t "${pid}" -m -p -- systemctl is-system-running 2>/dev/null)" || true
  [[ "${state}" == running || "${state}" == degraded ]] && break
  sleep 0.2
done
if [[ "${state}" != running && "${state}" != degraded ]]; then
  cat "${SD_DIR}/systemd.log" >&2
  kk_die "systemd (pid ${pid}) is not running after ${START_TIMEOUT}s (state: ${state:-none})"
fi
printf 'export KK_SYSTEMD_PID=%s\n' "${pid}" >"${SD_DIR}/env"
kk_log "systemd ${state} (pid ${pid}, cgroup ${name}); run in it: nsenter -t ${pid} -m -p -- CMD"

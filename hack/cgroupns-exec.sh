#!/usr/bin/env bash
# hack/cgroupns-exec.sh ROOT CMD...: run CMD in a cgroup namespace rooted at
# the cgroup ROOT (an absolute cgroup path that exists in every hierarchy,
# such as hack/conformance.sh's /kkconf-<pid>), with a mount namespace of
# its own in which every cgroup hierarchy under /sys/fs/cgroup is mounted
# again, so that CMD sees ROOT as "/": /proc/self/cgroup and
# /sys/fs/cgroup/<controller>/kubepods/... name what a kubelet with
# cgroupRoot ROOT made as one with cgroupRoot "/" would name them.
# upstream's node e2e suite assumes the latter (its CPU manager, cgroup
# manager and pod overhead specs read the pods' cgroups at /kubepods).
#
# The calling process is moved into ROOT (in every hierarchy) first: a
# cgroup namespace is rooted at its creator's cgroup. Only CMD and its
# children see the new views; the kubelet, the runtime and the caller keep
# theirs. Needs root.
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: $0 ROOT CMD..." >&2; exit 2; }
root="$1"
shift
if [[ -z "${KK_CGROUPNS_INNER:-}" ]]; then
  # Into ROOT: cgroup v2, or every v1 hierarchy (and a hybrid host's
  # unified one).
  while read -r _ mnt fstype _; do
    [[ "${fstype}" == cgroup || "${fstype}" == cgroup2 ]] || continue
    [[ -d "${mnt}${root}" ]] || { echo "$0: ${mnt}${root} missing" >&2; exit 1; }
    echo $$ >"${mnt}${root}/cgroup.procs"
  done </proc/self/mounts
  KK_CGROUPNS_INNER=1 exec unshare --cgroup --mount --propagation private -- bash "$0" "${root}" "$@"
fi
# Inside: each hierarchy unmounted (in this mount namespace only) and
# mounted again at the same place, now showing ROOT's subtree as its top
# (a hierarchy cannot be mounted twice on one mount point). The options are
# the hierarchy's own (its controllers, or name=systemd), less the mount
# flags.
mapfile -t hierarchies < <(awk '$3 == "cgroup" || $3 == "cgroup2" { print $2, $3, $4 }' /proc/self/mounts)
for h in "${hierarchies[@]}"; do
  read -r mnt _ _ <<<"${h}"
  umount -l "${mnt}"
done
for h in "${hierarchies[@]}"; do
  read -r mnt fstype opts <<<"${h}"
  case "${fstype}" in
  cgroup)
    sub="$(tr ',' '\n' <<<"${opts}" | grep -vxE 'rw|ro|nosuid|nodev|noexec|relatime|noatime|seclabel' | paste -sd, -)"
    mount -t cgroup -o "${sub:-none}" cgroup "${mnt}"
    ;;
  cgroup2) mount -t cgroup2 cgroup2 "${mnt}" ;;
  esac
done
exec "$@"

#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# hack/containerd-start.sh: start a private containerd (CRI plugin enabled)
# in the background for kubeletkit's integration tests and critest, using
# only files under $KK_WORK (run hack/containerd-setup.sh first). It:
#   - writes $KK_WORK/containerd/config.toml (own root/state dirs and socket,
#     cgroupfs, restrict_oom_score_adj, local pause image as sandbox image,
#     CNI from /usr/lib/cni with our own conf dir, runc state under $KK_WORK)
#     and a bridge+host-local+portmap CNI conflist (10.88.77.0/24, no default
#     route and no masquerading, so pods cannot reach beyond this machine);
#   - starts containerd detached (setsid), log in $KK_WORK/containerd.log,
#     PID in $KK_WORK/containerd.pid, and waits until both ctr and the CRI
#     service answer (deadline $KK_START_TIMEOUT seconds);
#   - imports docker.io/local/busybox:1 and docker.io/local/pause:1;
#   - writes $KK_WORK/env (lines "export KEY=VALUE": KK_CRI_ENDPOINT,
#     KK_BUSYBOX_IMAGE, KK_PAUSE_IMAGE, KK_CRICTL, KK_CRITEST, KK_WORK,
#     KK_CONTAINERD_PID) and prints the endpoint (unix://$KK_WORK/run/containerd.sock)
#     as its only line on stdout.
# If our containerd is already running it is reused (images re-imported),
# unless it is not the binary asked for (KK_CONTAINERD_VERSION changed).
#
# Environment variables:
#   KK_WORK                  work dir (default /tmp/kubeletkit-e2e)
#   KK_CONTAINERD_VERSION    empty: Debian's containerd 1.6 (version 2 config);
#                            a 2.x version: the binaries containerd-setup.sh
#                            built into $KK_APISERVER_CACHE/containerd-v<version>,
#                            first in PATH, with a version 3 config
#   KK_START_TIMEOUT         seconds to wait for containerd (default 30)
#   KK_CONTAINERD_LOG_LEVEL  containerd --log-level (default info)
#   KK_STREAM_PORT           CRI streaming server port on 127.0.0.1 (default 0 = random)
#   KK_CNI_SUBNET            pod subnet for the bridge network (default 10.88.77.0/24)
#   KK_CNI_DEFAULT_ROUTE=1   give pods a default route through the bridge
#                            (hack/cluster.sh's nodes, in network namespaces of
#                            their own; otherwise pods have none)
#   KK_CNI_BRIDGE_NAME       the Linux bridge of that network (default kkcni0, at
#                            most 15 bytes). A second containerd beside the first
#                            needs a KK_WORK, a subnet and a bridge of its own (the
#                            CNI bridge plugin refuses a second IPv4 gateway on a
#                            bridge), and its images/ and bin/crictl (links to the
#                            first's do): the autonomy test of examples/apiserver
#                            runs one so (docs/localstate.md).
#   KK_REGISTRY_HOSTS_DIR    the CRI registry config_path: a dir of <host>/hosts.toml
#                            (default $KK_WORK/containerd/certs.d, empty). Loopback
#                            registries (localhost, 127.0.0.1) need none: containerd
#                            pulls from them over plain HTTP by default.
set -euo pipefail
HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "${HACK_DIR}/lib.sh"

START_TIMEOUT="${KK_START_TIMEOUT:-30}"
LOG_LEVEL="${KK_CONTAINERD_LOG_LEVEL:-info}"
STREAM_PORT="${KK_STREAM_PORT:-0}"
CNI_SUBNET="${KK_CNI_SUBNET:-10.88.77.0/24}"
CNI_BRIDGE="${KK_CNI_BRIDGE_NAME:-${KK_CNI_BRIDGE}}"
CONFIG="${KK_CTRD_DIR}/config.toml"
CNI_CONF_DIR="${KK_CTRD_DIR}/cni"
REGISTRY_HOSTS_DIR="${KK_REGISTRY_HOSTS_DIR:-${KK_CTRD_DIR}/certs.d}"

[[ "$(id -u)" == 0 ]] || kk_die "must run as root"
if [[ -n "${KK_CONTAINERD_VERSION}" ]]; then
  # containerd 2.x's own binaries first: containerd finds its shim in PATH.
  for b in containerd containerd-shim-runc-v2 ctr; do
    [[ -x "${KK_CONTAINERD_BIN_DIR}/${b}" ]] ||
      kk_die "${KK_CONTAINERD_BIN_DIR}/${b} missing: run hack/containerd-setup.sh with KK_CONTAINERD_VERSION=${KK_CONTAINERD_VERSION}"
  done
  PATH="${KK_CONTAINERD_BIN_DIR}:${PATH}"
  export PATH
fi
for b in containerd containerd-shim-runc-v2 ctr runc; do
  command -v "${b}" >/dev/null 2>&1 || kk_die "${b} not found: run hack/containerd-setup.sh"
done
((${#CNI_BRIDGE} <= 15)) || kk_die "KK_CNI_BRIDGE_NAME ${CNI_BRIDGE}: a link name has at most 15 bytes"
for f in "${KK_IMAGES}/busybox.oci.tar" "${KK_IMAGES}/pause.oci.tar" "${KK_BIN}/crictl"; do
  [[ -f "${f}" ]] || kk_die "${f} missing: run hack/containerd-setup.sh"
done

write_config() {
  mkdir -p "${KK_CTRD_DIR}/root" "${KK_CTRD_DIR}/opt" "${KK_CTRD_DIR}/certs.d" \
    "${CNI_CONF_DIR}" "${KK_RUN}"
  if [[ -n "${KK_CONTAINERD_VERSION}" ]]; then
    write_config_v3
  else
    write_config_v2
  fi
  mv -f "${CONFIG}.new" "${CONFIG}"
  write_cni_config
}

# config_head VERSION PLUGIN...: the part of both configurations before
# the CRI plugins: our own root, state, sockets and opt dir, no debug or
# metrics listener, and PLUGIN... disabled.
config_head() {
  local version="$1" p
  shift
  printf '# Generated by hack/containerd-start.sh; private containerd %s for kubeletkit tests.\n' \
    "${KK_CONTAINERD_VERSION:-1.6 from Debian}"
  printf 'version = %s\nroot = "%s"\nstate = "%s"\noom_score = 0\ndisabled_plugins = [\n' \
    "${version}" "${KK_CTRD_DIR}/root" "${KK_RUN}"
  for p in "$@"; do printf '  "%s",\n' "${p}"; done
  cat <<EOF
]

[grpc]
  address = "${KK_SOCK}"

[ttrpc]
  address = "${KK_SOCK}.ttrpc"

[debug]
  address = ""

[metrics]
  address = ""

[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = "${KK_CTRD_DIR}/opt"
EOF
}

# write_config_v2: containerd 1.6's configuration (version 2).
write_config_v2() {
  {
    config_head 2 io.containerd.snapshotter.v1.{aufs,btrfs,devmapper,zfs}
    cat <<EOF

  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "${KK_PAUSE_IMAGE}"
    # The sandbox lacks CAP_SYS_RESOURCE: without this every RunPodSandbox
    # fails trying to lower oom_score_adj below containerd's own.
    restrict_oom_score_adj = true
    enable_selinux = false
    disable_apparmor = true
    disable_cgroup = false
    tolerate_missing_hugetlb_controller = true
    disable_hugetlb_controller = true
    stream_server_address = "127.0.0.1"
    stream_server_port = "${STREAM_PORT}"
    # Network namespaces go to our state dir, not /var/run/netns.
    netns_mounts_under_state_dir = true
    max_container_log_line_size = 16384

    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "overlayfs"
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          SystemdCgroup = false
          Root = "${KK_RUN}/runc"

    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "/usr/lib/cni"
      conf_dir = "${CNI_CONF_DIR}"
      max_conf_num = 1

    [plugins."io.containerd.grpc.v1.cri".registry]
      # Ours (empty unless KK_REGISTRY_HOSTS_DIR names another): no registry
      # host configuration from /etc/containerd is used.
      config_path = "${REGISTRY_HOSTS_DIR}"
EOF
  } >"${CONFIG}.new"
}

# write_config_v3: containerd 2.x's configuration (version 3): the same
# settings as write_config_v2, under the plugin IDs 2.x split the CRI plugin
# into (io.containerd.cri.v1.images, io.containerd.cri.v1.runtime and the
# streaming server's io.containerd.grpc.v1.cri). NRI, on by default in 2.x
# with a socket at /var/run/nri/nri.sock shared by every containerd of the
# machine, is disabled. Version 3 is read by every 2.x; 2.4 reads it too
# (migrating it in memory to its version 4, with a warning in the log).
write_config_v3() {
  {
    config_head 3 io.containerd.nri.v1.nri io.containerd.snapshotter.v1.{btrfs,devmapper,zfs}
    cat <<EOF

  [plugins."io.containerd.cri.v1.images"]
    snapshotter = "overlayfs"
    [plugins."io.containerd.cri.v1.images".pinned_images]
      sandbox = "${KK_PAUSE_IMAGE}"
    [plugins."io.containerd.cri.v1.images".registry]
      # Ours (empty unless KK_REGISTRY_HOSTS_DIR names another): no registry
      # host configuration from /etc/containerd is used.
      config_path = "${REGISTRY_HOSTS_DIR}"

  [plugins."io.containerd.cri.v1.runtime"]
    # The sandbox lacks CAP_SYS_RESOURCE: without this every RunPodSandbox
    # fails trying to lower oom_score_adj below containerd's own.
    restrict_oom_score_adj = true
    enable_selinux = false
    disable_apparmor = true
    tolerate_missing_hugetlb_controller = true
    disable_hugetlb_controller = true
    # Network namespaces go to our state dir, not /var/run/netns.
    netns_mounts_under_state_dir = true
    max_container_log_line_size = 16384

    [plugins."io.containerd.cri.v1.runtime".containerd]
      default_runtime_name = "runc"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
          SystemdCgroup = false
          Root = "${KK_RUN}/runc"

    [plugins."io.containerd.cri.v1.runtime".cni]
      bin_dirs = ["/usr/lib/cni"]
      conf_dir = "${CNI_CONF_DIR}"
      max_conf_num = 1

  [plugins."io.containerd.grpc.v1.cri"]
    stream_server_address = "127.0.0.1"
    stream_server_port = "${STREAM_PORT}"
EOF
  } >"${CONFIG}.new"
}

# write_cni_config: the CNI network of both configurations.
write_cni_config() {
  # A CNI network keeps the CRI plugin's NetworkReady condition true. Pods get
  # an address on a private bridge; there is no default route and no
  # masquerading, so pod traffic never leaves this machine. portmap serves
  # CRI host-port mappings (critest uses them on 127.0.0.1).
  rm -f "${CNI_CONF_DIR}"/*.conflist "${CNI_CONF_DIR}"/*.conf
  # A node of hack/cluster.sh, in a network namespace of its own, routes its
  # pods to the other node's and to the control plane: a default route.
  local CNI_ROUTES=""
  [[ "${KK_CNI_DEFAULT_ROUTE:-0}" != 1 ]] || CNI_ROUTES='
        "routes": [{"dst": "0.0.0.0/0"}],'
  cat >"${CNI_CONF_DIR}/10-kubeletkit.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "kubeletkit",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "${CNI_BRIDGE}",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "${CNI_SUBNET}"}]],${CNI_ROUTES}
        "dataDir": "${KK_RUN}/cni-ipam"
      }
    },
    {
      "type": "portmap",
      "capabilities": {"portMappings": true}
    }
  ]
}
EOF
}

launch() {
  : >>"${KK_LOG}"
  printf '\n==== %s containerd-start.sh ====\n' "$(date -Is)" >>"${KK_LOG}"
  rm -f "${KK_PIDFILE}" "${KK_SOCK}" "${KK_SOCK}.ttrpc"
  # setsid detaches containerd from our session; the inner shell records its
  # own PID and execs containerd, so the pid file holds containerd's PID even
  # if setsid had to fork. containerd outlives this script, so it keeps
  # none of our descriptors above stderr (KK_CLOSE_FDS): a lock the caller
  # holds on one (flock(1) around this script) stays the caller's.
  # shellcheck disable=SC2016 # $$ and $1.. are for the inner shell
  setsid bash -c 'echo $$ >"$1"; eval "${KK_CLOSE_FDS}"; exec containerd --config "$2" --log-level "$3"' \
    kk-containerd "${KK_PIDFILE}" "${CONFIG}" "${LOG_LEVEL}" \
    </dev/null >>"${KK_LOG}" 2>&1 &
  local i
  for ((i = 0; i < 50; i++)); do
    [[ -s "${KK_PIDFILE}" ]] && break
    sleep 0.1
  done
  [[ -s "${KK_PIDFILE}" ]] || kk_die "containerd did not start (no pid file); see ${KK_LOG}"
}

wait_ready() {
  local deadline=$((SECONDS + START_TIMEOUT)) pid
  pid="$(tr -dc '0-9' <"${KK_PIDFILE}")"
  while :; do
    if ! kk_pid_alive "${pid}"; then
      tail -n 30 "${KK_LOG}" >&2 || true
      kk_die "containerd (pid ${pid}) exited during startup; see ${KK_LOG}"
    fi
    if [[ -S "${KK_SOCK}" ]] &&
      timeout 5 ctr --address "${KK_SOCK}" version >/dev/null 2>&1 &&
      timeout 5 "${KK_CRICTL_CMD[@]}" --timeout 4s info >/dev/null 2>&1; then
      return 0
    fi
    if ((SECONDS >= deadline)); then
      tail -n 30 "${KK_LOG}" >&2 || true
      kk_die "containerd did not answer on ${KK_SOCK} within ${START_TIMEOUT}s; see ${KK_LOG}"
    fi
    sleep 0.2
  done
}

# import_image ARCHIVE REF: import an archive written by oci-image.sh (its
# index names the image REF) into the k8s.io namespace and check the CRI
# image service sees it.
import_image() {
  local archive="$1" ref="$2"
  kk_ctr images import --base-name "${ref%:*}" "${archive}" >/dev/null
  # grep reads the whole list (no -q): with pipefail, a grep that exits at
  # the first match can kill ctr with SIGPIPE and fail the check.
  kk_ctr images ls -q | grep -xF "${ref}" >/dev/null || kk_die "import of ${archive} did not create ${ref}"
  local deadline=$((SECONDS + 10))
  until timeout 5 "${KK_CRICTL_CMD[@]}" inspecti "${ref}" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || kk_die "CRI image service does not see ${ref}"
    sleep 0.2
  done
}

write_env() {
  cat >"${KK_WORK}/env.new" <<EOF
# Generated by hack/containerd-start.sh. Source it or parse "export KEY=VALUE".
export KK_WORK=${KK_WORK}
export KK_CRI_ENDPOINT=${KK_ENDPOINT}
export KK_BUSYBOX_IMAGE=${KK_BUSYBOX_IMAGE}
export KK_PAUSE_IMAGE=${KK_PAUSE_IMAGE}
export KK_CRICTL=${KK_BIN}/crictl
export KK_CRITEST=${KK_BIN}/critest
export KK_CONTAINERD_PID=$(tr -dc '0-9' <"${KK_PIDFILE}")
export KK_CONTAINERD_VERSION=${KK_CONTAINERD_VERSION}
EOF
  mv -f "${KK_WORK}/env.new" "${KK_WORK}/env"
  kk_write_crictl_yaml
}

main() {
  local t0=${SECONDS} pid
  kk_crictl_cmd "${KK_ENDPOINT}"
  mkdir -p "${KK_WORK}"
  pid="$(kk_our_containerd_pid)"
  if [[ -n "${pid}" && "$(readlink "/proc/${pid}/exe")" != "$(readlink -f "$(command -v containerd)")" ]]; then
    # A containerd of the other version (KK_CONTAINERD_VERSION changed).
    kk_log "containerd running (pid ${pid}) is $(readlink "/proc/${pid}/exe"), not the one asked for: restarting"
    pid=""
  fi
  if [[ -n "${pid}" ]]; then
    kk_log "containerd already running (pid ${pid}); reusing it"
  else
    # Clear whatever a crashed or killed earlier run left behind (stale pid
    # file, shims, mounts, state) so this start begins clean.
    "${HACK_DIR}/containerd-stop.sh" >&2
    write_config
    launch
    kk_log "containerd started (pid $(cat "${KK_PIDFILE}")); waiting for ${KK_SOCK}"
  fi
  wait_ready
  import_image "${KK_IMAGES}/busybox.oci.tar" "${KK_BUSYBOX_IMAGE}"
  import_image "${KK_IMAGES}/pause.oci.tar" "${KK_PAUSE_IMAGE}"
  write_env
  kk_log "containerd ready in $((SECONDS - t0))s; env file ${KK_WORK}/env"
  printf '%s\n' "${KK_ENDPOINT}"
}

main "$@"

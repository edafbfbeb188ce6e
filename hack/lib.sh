# shellcheck shell=bash
# shellcheck disable=SC2034 # variables are used by the scripts that source this file
# hack/lib.sh: shared settings and helpers for the hack/containerd-*.sh and
# hack/critest.sh scripts. It is sourced, never executed.
#
# Environment variables (all optional):
#   KK_WORK               work/cache dir (default /tmp/kubeletkit-e2e). Holds the
#                         built binaries (bin/), OCI image archives (images/),
#                         containerd config/root/state (containerd/, run/) and
#                         logs. Must not be on overlayfs/tmpfs for the overlayfs
#                         snapshotter to work; /tmp on the root ext4 is fine.
#   KK_CRI_TOOLS_VERSION  cri-tools module version for crictl/critest (v1.34.0).
#   KK_BUSYBOX_IMAGE      name of the busybox test image (docker.io/local/busybox:1).
#   KK_PAUSE_IMAGE        name of the pause/sandbox image (docker.io/local/pause:1).

KK_WORK="${KK_WORK:-/tmp/kubeletkit-e2e}"
KK_CRI_TOOLS_VERSION="${KK_CRI_TOOLS_VERSION:-v1.34.0}"
KK_BUSYBOX_IMAGE="${KK_BUSYBOX_IMAGE:-docker.io/local/busybox:1}"
KK_PAUSE_IMAGE="${KK_PAUSE_IMAGE:-docker.io/local/pause:1}"
# Images only critest needs (built by setup, imported by critest.sh).
KK_WEBSERVER_IMAGE="docker.io/local/webserver:1"
KK_HOSTNET_WEBSERVER_IMAGE="docker.io/local/hostnet-webserver:1"
KK_NONEWPRIVS_IMAGE="docker.io/local/nonewprivs:1"
KK_PREDEFINED_GROUP_IMAGE="docker.io/local/predefined-group:1"

KK_BIN="${KK_WORK}/bin"
KK_IMAGES="${KK_WORK}/images"
KK_BUILD="${KK_WORK}/build"
KK_CTRD_DIR="${KK_WORK}/containerd"   # config.toml, root/, cni conf
KK_RUN="${KK_WORK}/run"               # containerd state dir and socket
KK_SOCK="${KK_RUN}/containerd.sock"
KK_ENDPOINT="unix://${KK_SOCK}"
KK_PIDFILE="${KK_WORK}/containerd.pid"
KK_CNI_BRIDGE="kkcni0"                 # Linux bridge of our CNI network
KK_LOG="${KK_WORK}/containerd.log"

# The Go toolchain may live outside PATH on a fresh machine.
if ! command -v go >/dev/null 2>&1 && [[ -x /usr/local/go/bin/go ]]; then
  PATH="/usr/local/go/bin:${PATH}"
fi
# containerd, runc and iptables live in sbin dirs that a non-login PATH may lack.
PATH="${PATH}:/usr/local/sbin:/usr/sbin:/sbin"
export PATH

kk_log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
kk_die() { kk_log "ERROR: $*"; exit 1; }

# kk_write_crictl_yaml: crictl reads crictl.yaml next to its binary when
# /etc/crictl.yaml is absent; point it at our containerd so a bare
# "$KK_WORK/bin/crictl ps" works. The scripts pass it with --config.
kk_write_crictl_yaml() {
  mkdir -p "${KK_BIN}"
  printf 'runtime-endpoint: %s\nimage-endpoint: %s\ntimeout: 30\n' \
    "${KK_ENDPOINT}" "${KK_ENDPOINT}" >"${KK_BIN}/crictl.yaml"
}

# kk_crictl_cmd ENDPOINT: set the array KK_CRICTL_CMD to a crictl command
# line for ENDPOINT (runtime and image service), usable with timeout(1).
kk_crictl_cmd() {
  KK_CRICTL_CMD=("${KK_BIN}/crictl" --config "${KK_BIN}/crictl.yaml"
    --runtime-endpoint "$1" --image-endpoint "$1")
}

# kk_ctr runs ctr against our containerd in the CRI (k8s.io) namespace.
kk_ctr() { ctr --address "${KK_SOCK}" --namespace k8s.io "$@"; }

# KK_CLOSE_FDS is shell code for the inner shell that execs a daemon: it
# closes every descriptor above stderr, so that a daemon which outlives the
# script holds none of its caller's (a lock taken with flock(1) around the
# script stays the caller's, and ends with it).
# shellcheck disable=SC2016 # expanded by the inner shell
KK_CLOSE_FDS='for fd in $(ls /proc/$$/fd); do ((fd > 2)) && eval "exec $fd>&-"; done'
export KK_CLOSE_FDS

# kk_pid_alive PID: true when PID exists and is not a zombie.
kk_pid_alive() {
  local pid="$1" state
  [[ -n "${pid}" && -r "/proc/${pid}/stat" ]] || return 1
  state="$(sed -E 's/^[0-9]+ \(.*\) (.).*/\1/' "/proc/${pid}/stat" 2>/dev/null)" || return 1
  [[ "${state}" != "Z" && "${state}" != "X" ]]
}

# kk_our_containerd_pid prints the PID from the pid file when that process is
# alive and really is a containerd using our config; nothing otherwise.
kk_our_containerd_pid() {
  local pid=""
  [[ -f "${KK_PIDFILE}" ]] && pid="$(tr -dc '0-9' <"${KK_PIDFILE}")"
  if kk_is_our_containerd "${pid}"; then
    printf '%s\n' "${pid}"
  fi
}

# kk_is_our_containerd PID: true when PID is alive and runs containerd with
# our config file (so it was started by containerd-start.sh for this KK_WORK).
kk_is_our_containerd() {
  local pid="$1" cmdline
  kk_pid_alive "${pid}" || return 1
  cmdline="$(tr '\0' ' ' 2>/dev/null <"/proc/${pid}/cmdline" || true)"
  [[ "${cmdline}" == "containerd --config ${KK_CTRD_DIR}/config.toml "* ]]
}

# kk_find_our_containerd: PIDs of every containerd using our config (used
# when the pid file is missing or stale).
kk_find_our_containerd() {
  local p
  for p in /proc/[0-9]*; do
    p="${p#/proc/}"
    if kk_is_our_containerd "${p}"; then printf '%s\n' "${p}"; fi
  done
}

# ---- control plane (etcd + kube-apiserver) for API-server tests ----------
# Used by hack/controlplane-{setup,start,stop,smoke}.sh. Environment
# variables (all optional):
#   KK_K8S_VERSION      kube-apiserver version (v1.36.3); must match
#                       hack/apiserver/go.mod, which pins it.
#   KK_APISERVER_CACHE  dir of the cached kube-apiserver-<version>,
#                       kubectl-<version>, kubelet-<version>,
#                       kube-controller-manager-<version> and
#                       kube-scheduler-<version> binaries (and of
#                       metrics-server-<version>/, containerd-v<version>/)
#                       (default $KK_WORK/bin); point it at a persistent dir
#                       when KK_WORK is a fresh temp dir (as in .ci/run).
# The hard eviction thresholds of every kubelet the harnesses run (upstream
# kubelet, minikubelet, vknode), as upstream's hack/local-up-cluster.sh sets
# them: the defaults less imagefs.available<15%. A host whose disk keeps a
# large reserve for root (this machine's: under 15% of its blocks available
# to root, with most of them free) meets that threshold before a test
# starts, and both kubelets would then refuse every pod with DiskPressure:
# the harnesses judge kubelets, not the host's disk. conformance.sh,
# fidelity.sh and scale.sh set their own. KK_EVICTION_HARD is the flag form,
# kk_eviction_hard_yaml prints the configuration file's line.
KK_EVICTION_HARD="memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%"
kk_eviction_hard_yaml() {
  printf 'evictionHard: {memory.available: 100Mi, nodefs.available: "10%%", nodefs.inodesFree: "5%%"}\n'
}
KK_K8S_VERSION="${KK_K8S_VERSION:-v1.36.3}"
KK_APISERVER_MODULE_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/apiserver"
KK_APISERVER_CACHE="${KK_APISERVER_CACHE:-${KK_BIN}}"
KK_APISERVER_BIN="${KK_APISERVER_CACHE}/kube-apiserver-${KK_K8S_VERSION}"
KK_KUBELET_BIN="${KK_APISERVER_CACHE}/kubelet-${KK_K8S_VERSION}"
KK_KUBECTL_BIN="${KK_APISERVER_CACHE}/kubectl-${KK_K8S_VERSION}"
# The controller-manager and scheduler of the join harness (hack/join.sh).
KK_CONTROLLER_MANAGER_BIN="${KK_APISERVER_CACHE}/kube-controller-manager-${KK_K8S_VERSION}"
KK_SCHEDULER_BIN="${KK_APISERVER_CACHE}/kube-scheduler-${KK_K8S_VERSION}"
# virtual-kubelet's own command (its mock provider), at the version
# examples/go.mod requires, cached beside them.
KK_VK_VERSION="$(awk '$1 == "github.com/virtual-kubelet/virtual-kubelet" { print $2 }' \
  "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../examples/go.mod")"
KK_VK_BIN="${KK_APISERVER_CACHE}/virtual-kubelet-${KK_VK_VERSION}"

# ---- containerd 2.x, built from its Go module ----------------------------
#   KK_CONTAINERD_VERSION  empty (default): Debian's containerd 1.6 from apt.
#                          A 2.x version (2.4.2 or v2.4.2): containerd, its runc
#                          shim and ctr built from github.com/containerd/containerd/v2
#                          at that version (kk_build_containerd), cached in
#                          $KK_APISERVER_CACHE/containerd-v<version>/, and started
#                          by containerd-start.sh with a version 3 config.
KK_CONTAINERD_VERSION="${KK_CONTAINERD_VERSION:-}"
KK_CONTAINERD_VERSION="${KK_CONTAINERD_VERSION#v}"
KK_CONTAINERD_BIN_DIR=""
if [[ -n "${KK_CONTAINERD_VERSION}" ]]; then
  [[ "${KK_CONTAINERD_VERSION}" == 2.* ]] ||
    kk_die "KK_CONTAINERD_VERSION=${KK_CONTAINERD_VERSION}: only a 2.x version is built from source (empty: Debian's 1.6)"
  KK_CONTAINERD_BIN_DIR="${KK_APISERVER_CACHE}/containerd-v${KK_CONTAINERD_VERSION}"
fi

# kk_build_containerd: build containerd, containerd-shim-runc-v2 and ctr of
# KK_CONTAINERD_VERSION from github.com/containerd/containerd/v2 (Go module
# proxy) into KK_CONTAINERD_BIN_DIR, unless all three are there (KK_REBUILD=1
# builds anyway). About 2 CPU-minutes with a warm module cache.
kk_build_containerd() {
  local dir="${KK_CONTAINERD_BIN_DIR}" mod="github.com/containerd/containerd/v2"
  local v="v${KK_CONTAINERD_VERSION}" b cached=1 tmp json src t0=${SECONDS}
  [[ -n "${dir}" ]] || kk_die "kk_build_containerd: KK_CONTAINERD_VERSION is not set"
  for b in containerd containerd-shim-runc-v2 ctr; do
    [[ -x "${dir}/${b}" ]] || cached=0
  done
  if ((cached)) && [[ "${KK_REBUILD:-0}" != 1 ]]; then
    kk_log "containerd ${v} cached: ${dir}"
    return 0
  fi
  command -v go >/dev/null 2>&1 || kk_die "go not found"
  tmp="$(mktemp -d)"
  # Outside any module, so the repository's go.mod/go.work are not involved.
  json="$(cd "${tmp}" && GOWORK=off GOTOOLCHAIN=local GOFLAGS=-mod=mod \
    go mod download -json "${mod}@${v}")" || { rm -rf "${tmp}"; kk_die "go mod download ${mod}@${v} failed"; }
  src="$(printf '%s\n' "${json}" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' | head -n1)"
  [[ -n "${src}" && -d "${src}/cmd/containerd" ]] || { rm -rf "${tmp}"; kk_die "go mod download gave no usable Dir: ${json}"; }
  # The module cache is read-only: build from a writable copy.
  cp -r "${src}" "${tmp}/src"
  chmod -R u+w "${tmp}/src"
  kk_log "building containerd ${v} (containerd, containerd-shim-runc-v2, ctr; about 2 CPU-minutes)"
  # The snapshotters that need C libraries this machine lacks are left out;
  # overlayfs (ours) needs none. The version is stamped as upstream's
  # Makefile stamps it, so `containerd --version` and the CRI say ${v}.
  (cd "${tmp}/src" && GOWORK=off GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=1 nice -n 19 \
    go build -tags "no_btrfs no_devmapper no_zfs" \
    -ldflags "-X ${mod}/version.Version=${v} -X ${mod}/version.Package=${mod}" \
    -o "${tmp}/bin/" ./cmd/containerd ./cmd/containerd-shim-runc-v2 ./cmd/ctr) ||
    { rm -rf "${tmp}"; kk_die "containerd ${v} build failed"; }
  mkdir -p "$(dirname "${dir}")"
  rm -rf "${dir}"
  mv "${tmp}/bin" "${dir}"
  rm -rf "${tmp}"
  kk_log "built ${dir} in $((SECONDS - t0))s: $("${dir}/containerd" --version)"
}

KK_CP_DIR="${KK_WORK}/controlplane"        # certs, keys, kubeconfig, env
KK_ETCD_DATA="${KK_CP_DIR}/etcd-data"
KK_ETCD_PIDFILE="${KK_WORK}/etcd.pid"
KK_ETCD_LOG="${KK_WORK}/etcd.log"
KK_APISERVER_PIDFILE="${KK_WORK}/kube-apiserver.pid"
KK_APISERVER_LOG="${KK_WORK}/kube-apiserver.log"
KK_CP_ENV="${KK_CP_DIR}/env"
KK_KCM_PIDFILE="${KK_WORK}/kube-controller-manager.pid"
KK_KCM_LOG="${KK_WORK}/kube-controller-manager.log"
KK_SCHEDULER_PIDFILE="${KK_WORK}/kube-scheduler.pid"
KK_SCHEDULER_LOG="${KK_WORK}/kube-scheduler.log"
KK_KUBECONFIG="${KK_CP_DIR}/kubeconfig"

# kk_cmdline PID: the command line of PID with NULs turned into spaces.
kk_cmdline() { tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline" || true; }

# kk_is_our_etcd PID: true when PID is alive and runs etcd with our data dir.
kk_is_our_etcd() {
  local pid="$1"
  kk_pid_alive "${pid}" || return 1
  [[ "$(kk_cmdline "${pid}")" == "etcd "*" --data-dir ${KK_ETCD_DATA} "* ]]
}

# kk_is_our_apiserver PID: true when PID is alive and runs a
# kube-apiserver-<version> binary whose first flag is our cert dir (unique to
# this KK_WORK), as hack/controlplane-start.sh starts it.
kk_is_our_apiserver() {
  local pid="$1" cmd
  kk_pid_alive "${pid}" || return 1
  cmd="$(kk_cmdline "${pid}")"
  [[ "${cmd}" == /*"/kube-apiserver-v"*" --cert-dir=${KK_CP_DIR}/pki "* ]]
}

# kk_is_our_kcm PID and kk_is_our_scheduler PID: true when PID is alive and
# runs that binary with our admin kubeconfig as its first flag, as
# hack/controlplane-start.sh starts them with KK_CP_CLUSTER=1.
kk_is_our_kcm() {
  kk_pid_alive "$1" || return 1
  [[ "$(kk_cmdline "$1")" == /*"/kube-controller-manager-v"*" --kubeconfig=${KK_KUBECONFIG} "* ]]
}
kk_is_our_scheduler() {
  kk_pid_alive "$1" || return 1
  [[ "$(kk_cmdline "$1")" == /*"/kube-scheduler-v"*" --kubeconfig=${KK_KUBECONFIG} "* ]]
}

# metrics-server (KK_METRICS_SERVER=1 or --start-metrics-server): its
# serving certificate and kubeconfig under the control plane's dir.
KK_MS_DIR="${KK_CP_DIR}/metrics-server"
KK_MS_PIDFILE="${KK_WORK}/metrics-server.pid"
KK_MS_LOG="${KK_WORK}/metrics-server.log"

# kk_is_our_metrics_server PID: true when PID is alive and runs a
# metrics-server binary whose first flag is our kubeconfig for it (unique to
# this KK_WORK), as hack/controlplane-start.sh starts it.
kk_is_our_metrics_server() {
  kk_pid_alive "$1" || return 1
  [[ "$(kk_cmdline "$1")" == /*"/metrics-server --kubeconfig=${KK_MS_DIR}/kubeconfig "* ]]
}

# kk_pidfile_pid PIDFILE CHECK: print the PID in PIDFILE when CHECK PID (one
# of the kk_is_our_* functions) accepts it; nothing otherwise.
kk_pidfile_pid() {
  local pid=""
  [[ -f "$1" ]] && pid="$(tr -dc '0-9' <"$1")"
  if [[ -n "${pid}" ]] && "$2" "${pid}"; then printf '%s\n' "${pid}"; fi
}

# kk_find_pids CHECK COMM: every PID whose /proc/PID/comm is COMM and that
# CHECK PID accepts (used when the pid file is lost). The comm filter is a
# bash builtin read, so the scan forks nothing for unrelated processes.
kk_find_pids() {
  local p comm
  for p in /proc/[0-9]*; do
    comm=""
    read -r comm 2>/dev/null <"${p}/comm" || true
    [[ "${comm}" == "$2" ]] || continue
    p="${p#/proc/}"
    if "$1" "${p}"; then printf '%s\n' "${p}"; fi
  done
}

# kk_stop_pid NAME PID [TIMEOUT]: SIGTERM, wait up to TIMEOUT seconds
# (default $KK_STOP_TIMEOUT, else 15), then SIGKILL; fails when PID is still
# alive 5s after that.
kk_stop_pid() {
  local name="$1" pid="$2" timeout="${3:-${KK_STOP_TIMEOUT:-15}}" deadline
  kk_log "stopping ${name} (pid ${pid})"
  kill -TERM "${pid}" 2>/dev/null || true
  deadline=$((SECONDS + timeout))
  while kk_pid_alive "${pid}" && ((SECONDS < deadline)); do
    sleep 0.1
  done
  if kk_pid_alive "${pid}"; then
    kk_log "${name} did not exit within ${timeout}s: SIGKILL"
    kill -KILL "${pid}" 2>/dev/null || true
    deadline=$((SECONDS + 5))
    while kk_pid_alive "${pid}" && ((SECONDS < deadline)); do
      sleep 0.1
    done
    if kk_pid_alive "${pid}"; then
      kk_log "${name} (pid ${pid}) survived SIGKILL"
      return 1
    fi
  fi
}

# kk_mounts_under DIR: the mount points at or below DIR, deepest first.
kk_mounts_under() {
  local dir="$1" mp
  while read -r _ _ _ _ mp _; do
    mp="$(printf '%b' "${mp}")" # decode \040-style escapes
    [[ "${mp}" == "${dir}" || "${mp}" == "${dir}/"* ]] && printf '%s\n' "${mp}"
  done </proc/self/mountinfo | awk '{ print length($0) "\t" $0 }' | sort -rn -k1,1 | cut -f2-
}

# kk_unmount_under DIR: unmount everything mounted at or below DIR, deepest
# first, falling back to a lazy unmount; up to three passes.
kk_unmount_under() {
  local dir="$1" mp n=0 pass
  for pass in 1 2 3; do
    while IFS= read -r mp; do
      [[ -n "${mp}" ]] || continue
      n=$((n + 1))
      umount "${mp}" 2>/dev/null || umount -l "${mp}" 2>/dev/null ||
        kk_log "warning: cannot unmount ${mp}"
    done < <(kk_mounts_under "${dir}")
    [[ -z "$(kk_mounts_under "${dir}")" ]] && break
    [[ "${pass}" == 3 ]] || sleep 0.5
  done
  ((n == 0)) || kk_log "unmounted ${n} mount(s) under ${dir}"
}

# kk_free_port: print a TCP port on 127.0.0.1 that nothing listens on or
# connects from right now, from the range 20000-44999 (below Linux's default
# ephemeral range, so outgoing connections rarely take it). A small race
# with other starters remains; start checks the daemon really bound it.
kk_free_port() {
  local p i
  for ((i = 0; i < 200; i++)); do
    p=$((20000 + RANDOM % 25000))
    if [[ -z "$(ss -Htan "( sport = :${p} )" 2>/dev/null)" ]]; then
      printf '%s\n' "${p}"
      return 0
    fi
  done
  kk_die "no free TCP port found on 127.0.0.1"
}

# kk_build_upstream NAME BIN: build k8s.io/kubernetes/cmd/NAME at
# KK_K8S_VERSION from hack/apiserver's module into BIN, unless BIN exists
# (KK_REBUILD=1 builds anyway).
kk_build_upstream() {
  local name="$1" bin="$2"
  if [[ -x "${bin}" && "${KK_REBUILD:-0}" != 1 ]]; then
    kk_log "${name} cached: ${bin}"
    return 0
  fi
  command -v go >/dev/null 2>&1 || kk_die "go not found"
  grep -Eq "^require k8s.io/kubernetes ${KK_K8S_VERSION//./\\.}( |\$)" "${KK_APISERVER_MODULE_DIR}/go.mod" ||
    kk_die "KK_K8S_VERSION=${KK_K8S_VERSION} is not what ${KK_APISERVER_MODULE_DIR}/go.mod requires"
  local v="${KK_K8S_VERSION#v}" major minor t0=${SECONDS} ldflags pkg
  major="${v%%.*}"
  minor="${v#*.}"
  minor="${minor%%.*}"
  # The version a release build stamps in; without it the binary reports
  # v0.0.0-master.
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X ${pkg}.gitMajor=${major} -X ${pkg}.gitMinor=${minor}"
    ldflags+=" -X ${pkg}.gitVersion=${KK_K8S_VERSION} -X ${pkg}.gitTreeState=clean"
  done
  mkdir -p "$(dirname "${bin}")"
  kk_log "building ${name} ${KK_K8S_VERSION} (about 4 minutes on 2 cores with an empty Go build cache)"
  (
    cd "${KK_APISERVER_MODULE_DIR}"
    GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0 nice -n 10 \
      go build -trimpath -ldflags "${ldflags}" -o "${bin}.tmp" "k8s.io/kubernetes/cmd/${name}"
  ) || { rm -f "${bin}.tmp"; kk_die "${name} build failed"; }
  mv -f "${bin}.tmp" "${bin}"
  # kubectl has no --version flag; its version command says the same.
  kk_log "built ${bin} in $((SECONDS - t0))s: $("${bin}" --version 2>/dev/null || "${bin}" version --client 2>/dev/null | head -1)"
}

# kk_build_virtual_kubelet: build virtual-kubelet's own command into
# KK_VK_BIN unless it is there. Its mock provider is the baseline that
# hack/fidelity.sh compares our adapter with; that provider is internal to
# the command, so the command is what we build (`go install pkg@version`,
# outside any workspace).
kk_build_virtual_kubelet() {
  [[ -n "${KK_VK_VERSION}" ]] || kk_die "examples/go.mod does not require github.com/virtual-kubelet/virtual-kubelet"
  if [[ -x "${KK_VK_BIN}" && "${KK_REBUILD:-0}" != 1 ]]; then
    kk_log "virtual-kubelet cached: ${KK_VK_BIN}"
    return 0
  fi
  kk_go_install "github.com/virtual-kubelet/virtual-kubelet/cmd/virtual-kubelet@${KK_VK_VERSION}" "${KK_VK_BIN}"
}

# ---- metrics-server (kubectl top) ---------------------------------------
#   KK_METRICS_SERVER_VERSION  sigs.k8s.io/metrics-server release (v0.8.0); its
#                              binary is cached as
#                              $KK_APISERVER_CACHE/metrics-server-<version>/metrics-server.
#                              v0.9.0 is served by the module proxy but is not an
#                              approved release here: refused.
KK_METRICS_SERVER_VERSION="${KK_METRICS_SERVER_VERSION:-v0.8.0}"
KK_METRICS_SERVER_DIR="${KK_APISERVER_CACHE}/metrics-server-${KK_METRICS_SERVER_VERSION}"
KK_METRICS_SERVER_BIN="${KK_METRICS_SERVER_DIR}/metrics-server"

# kk_build_metrics_server: build sigs.k8s.io/metrics-server/cmd/metrics-server
# at KK_METRICS_SERVER_VERSION into KK_METRICS_SERVER_BIN unless it is there
# (KK_REBUILD=1 builds anyway). `go install pkg@version` outside any module
# and workspace: the release's own go.mod (no replace directives) picks every
# dependency, as its Makefile's build does; the machine's Go (the release
# asks for go 1.24.4). The version is stamped where the release build stamps
# it (client-go's version package), so `metrics-server --version` says it.
kk_build_metrics_server() {
  local v="${KK_METRICS_SERVER_VERSION}" mod=sigs.k8s.io/metrics-server gobin t0=${SECONDS} ldflags
  [[ "${v}" != v0.9.0 ]] || kk_die "metrics-server v0.9.0 is not an approved release: use v0.8.0"
  if [[ -x "${KK_METRICS_SERVER_BIN}" && "${KK_REBUILD:-0}" != 1 ]]; then
    kk_log "metrics-server ${v} cached: ${KK_METRICS_SERVER_BIN}"
    return 0
  fi
  command -v go >/dev/null 2>&1 || kk_die "go not found"
  gobin="$(mktemp -d)"
  ldflags="-s -w -X k8s.io/client-go/pkg/version.gitVersion=${v} -X k8s.io/client-go/pkg/version.gitTreeState=clean"
  kk_log "building metrics-server ${v}"
  (cd "${gobin}" && GOWORK=off GOTOOLCHAIN=local GOFLAGS=-mod=mod GOBIN="${gobin}" CGO_ENABLED=0 nice -n 10 \
    go install -trimpath -ldflags "${ldflags}" "${mod}/cmd/metrics-server@${v}") ||
    { rm -rf "${gobin}"; kk_die "metrics-server ${v}: build failed"; }
  mkdir -p "${KK_METRICS_SERVER_DIR}"
  mv -f "${gobin}/metrics-server" "${KK_METRICS_SERVER_BIN}"
  rm -rf "${gobin}"
  kk_log "built ${KK_METRICS_SERVER_BIN} in $((SECONDS - t0))s: $("${KK_METRICS_SERVER_BIN}" --version 2>/dev/null | head -1)"
}

# kk_go_install PKG@VERSION BIN: `go install` PKG at VERSION outside any
# workspace (static, trimmed), into BIN, even if BIN exists (the caller
# decides when to build). About 4 minutes on 2 cores with an empty Go build
# cache for virtual-kubelet or CoreDNS.
kk_go_install() {
  local pkg="$1" bin="$2" gobin t0=${SECONDS}
  command -v go >/dev/null 2>&1 || kk_die "go not found"
  gobin="$(mktemp -d)"
  kk_log "building ${pkg}"
  (cd "${gobin}" && GOWORK=off GOBIN="${gobin}" CGO_ENABLED=0 nice -n 10 \
    go install -trimpath -ldflags "-s -w" "${pkg}") ||
    { rm -rf "${gobin}"; kk_die "${pkg}: build failed"; }
  mkdir -p "$(dirname "${bin}")"
  local name="${pkg%@*}"
  mv -f "${gobin}/${name##*/}" "${bin}"
  rm -rf "${gobin}"
  kk_log "built ${bin} in $((SECONDS - t0))s"
}

# kk_serving_cert DIR NAME [SAN...]: a self-signed serving certificate for
# NAME and 127.0.0.1 (and each SAN, as DNS:name or IP:address), DIR/tls.crt
# and DIR/tls.key (the key 0600), valid for a day.
kk_serving_cert() {
  local dir="$1" name="$2" sans
  shift 2
  sans="DNS:${name},IP:127.0.0.1$(printf ',%s' "$@")"
  sans="${sans%,}"
  command -v openssl >/dev/null 2>&1 || kk_die "openssl not found"
  mkdir -p "${dir}"
  (umask 077 && openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=${name}" \
    -addext "subjectAltName=${sans}" -keyout "${dir}/tls.key" -out "${dir}/tls.crt" 2>/dev/null) ||
    kk_die "openssl could not make a serving certificate for ${name}"
}

# ---- kubelets isolated from the host and from each other ----------------
# Upstream kubelet writes /var/lib/kubelet/device-plugins/kubelet.sock (a
# fixed path) and, unless --cert-dir says otherwise, /var/lib/kubelet/pki,
# whatever its --root-dir. hack/fidelity.sh and hack/bench-startup.sh give
# it --cert-dir under their run directory, and run every kubelet (upstream
# and minikubelet) in a private mount namespace where /var/lib/kubelet is a
# directory of that run. A kubelet mounts its pods' volumes (tmpfs for
# secrets and configMaps, subPath binds) under its --root-dir, and the
# runtime, in the host's namespace, must see them: kk_share_dir makes the
# run directory a shared mount, so that what is mounted under it in the
# kubelet's namespace propagates to the host's (and is unmounted there by
# kk_unmount_under), while the bind over /var/lib/kubelet, on a private
# mount, stays in the kubelet's namespace.

# kk_share_dir DIR: bind DIR onto itself and make that mount shared.
# kk_unmount_under DIR undoes it.
kk_share_dir() {
  mount --bind "$1" "$1"
  mount --make-shared "$1"
}

# kk_isolate VAR_DIR CMD...: set the array KK_ISOLATED_CMD to a command line
# that runs CMD in a new mount namespace where VAR_DIR (which must be under a
# directory kk_share_dir shared) is bound over /var/lib/kubelet. The
# namespace starts with the host's propagation (unshare's default would make
# every mount private, the shared run directory too); the mount holding
# /var/lib/kubelet is made private in it first, so the bind never reaches
# the host. The wrapper (unshare, then sh) execs CMD, so CMD keeps the PID
# the caller started. When /var/lib/kubelet does not exist, it is created,
# empty, as the mount point, and left in place.
kk_isolate() {
  local var_dir="$1" parent
  shift
  if [[ ! -d /var/lib/kubelet ]]; then
    mkdir -p /var/lib/kubelet
    kk_log "created /var/lib/kubelet (empty): the mount point of the kubelets' own copies"
  fi
  mkdir -p "${var_dir}"
  parent="$(findmnt -n -o TARGET --target /var/lib/kubelet)" || kk_die "no mount holds /var/lib/kubelet"
  # shellcheck disable=SC2016 # expanded by the wrapper's sh
  KK_ISOLATED_CMD=(unshare --mount --propagation unchanged -- sh -c
    'set -e; mount --make-private "$1"; mount --bind "$2" /var/lib/kubelet; mount --make-private /var/lib/kubelet; shift 2; exec "$@"'
    kk-isolate "${parent}" "${var_dir}" "$@")
}

# kk_runs PID BIN: true when PID is alive and runs BIN: as its command, or
# still in kk_isolate's wrapper on its way to exec BIN.
kk_runs() {
  local pid="$1" bin="$2" cmd
  kk_pid_alive "${pid}" || return 1
  cmd="$(kk_cmdline "${pid}")"
  [[ "${cmd}" == "${bin} "* || "${cmd}" == "${bin}" ||
    "${cmd}" == "unshare --mount "*" ${bin} "* || "${cmd}" == "sh -c "*" kk-isolate "*" ${bin} "* ]]
}

# kk_check NAME CMD...: one check of a harness that sets OUT (the directory
# of its outputs), AGENT (the kubelet under test) and FAILED: CMD's output
# goes to OUT/NAME.txt, an ok or FAIL line is logged (a failure with the
# output's last lines), a failure sets FAILED=1, and the run goes on.
kk_check() {
  local name="$1"
  shift
  if "$@" >"${OUT}/${name}.txt" 2>&1; then
    kk_log "${AGENT}: ok   ${name}"
  else
    kk_log "${AGENT}: FAIL ${name}: $(tail -n 5 "${OUT}/${name}.txt" | tr '\n' ' ')"
    FAILED=1
  fi
}

# ---- what kubeadm init and kubeadm join make (hack/join.sh, hack/cluster.sh)

KK_KUBEADM_TOKEN_GROUP=system:bootstrappers:kubeadm:default-node-token

# kk_kubeadm_token: a new bootstrap token in kubeadm's form
# ([a-z0-9]{6}.[a-z0-9]{16}).
kk_kubeadm_token() {
  printf '%s.%s\n' "$(tr -dc 'a-z0-9' </dev/urandom | head -c 6)" "$(tr -dc 'a-z0-9' </dev/urandom | head -c 16)"
}

# kk_kubeadm_token_secret TOKEN EXPIRATION: the token's Secret, as kubeadm
# token create makes it (in the group kubeadm's bindings name).
kk_kubeadm_token_secret() {
  cat <<EOF
apiVersion: v1
kind: Secret
metadata: {name: bootstrap-token-${1%.*}, namespace: kube-system}
type: bootstrap.kubernetes.io/token
stringData:
  token-id: "${1%.*}"
  token-secret: "${1#*.}"
  expiration: "$2"
  usage-bootstrap-authentication: "true"
  usage-bootstrap-signing: "true"
  auth-extra-groups: ${KK_KUBEADM_TOKEN_GROUP}
  description: "as kubeadm token create"
EOF
}

# kk_kubeadm_cluster_objects: the RBAC kubeadm init makes for joining nodes:
# CSRs by the token's group, their auto-approval and that of the nodes'
# renewals, get nodes, and reading the kubelet-config ConfigMap.
kk_kubeadm_cluster_objects() {
  local g="${KK_KUBEADM_TOKEN_GROUP}"
  cat <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "kubeadm:kubelet-bootstrap"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:node-bootstrapper"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "${g}"}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "kubeadm:node-autoapprove-bootstrap"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:certificates.k8s.io:certificatesigningrequests:nodeclient"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "${g}"}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "kubeadm:node-autoapprove-certificate-rotation"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:nodes"}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "kubeadm:get-nodes"}
rules: [{apiGroups: [""], resources: [nodes], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "kubeadm:get-nodes"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "kubeadm:get-nodes"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "${g}"}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: "kubeadm:kubelet-config", namespace: kube-system}
rules: [{apiGroups: [""], resources: [configmaps], resourceNames: [kubelet-config], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: "kubeadm:kubelet-config", namespace: kube-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: "kubeadm:kubelet-config"}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:nodes"}
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: "${g}"}
EOF
}

# kk_kubeadm_bootstrap_kubeconfig FILE SERVER CA_FILE TOKEN:
# bootstrap-kubelet.conf as kubeadm join writes it (mode 0600).
kk_kubeadm_bootstrap_kubeconfig() {
  (
    umask 077
    cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kubernetes
  cluster:
    server: $2
    certificate-authority-data: $(base64 -w0 <"$3")
contexts:
- name: tls-bootstrap-token-user@kubernetes
  context: {cluster: kubernetes, user: tls-bootstrap-token-user}
current-context: tls-bootstrap-token-user@kubernetes
users:
- name: tls-bootstrap-token-user
  user: {token: $4}
EOF
  )
}

# kk_kubeadm_kubelet_config CLIENT_CA ENDPOINT POD_LOGS STATIC PORT HEALTHZ_PORT [LINE...]:
# print kubeadm's KubeletConfiguration (its zero durations mean the
# kubelet's defaults), with what this machine needs: the runtime at
# ENDPOINT, cgroupfs (no systemd here) without QoS cgroups, or, when
# KK_KUBELET_CGROUP_ROOT names a cgroup (made by kk_make_cgroup_root), with
# pod and QoS cgroups under it and node allocatable enforced on its
# kubepods, as a kubeadm node has them under /; no swap check,
# pod logs and static pods where the harness says, the kubelet API on PORT,
# the healthz port on HEALTHZ_PORT (kubeadm's 10248 clashes when kubelets
# share a network namespace), cluster DNS 10.96.0.10; each LINE appended.
kk_kubeadm_kubelet_config() {
  cat <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  anonymous:
    enabled: false
  webhook:
    cacheTTL: 0s
    enabled: true
  x509:
    clientCAFile: $1
authorization:
  mode: Webhook
  webhook:
    cacheAuthorizedTTL: 0s
    cacheUnauthorizedTTL: 0s
cgroupDriver: cgroupfs
$(if [[ -n "${KK_KUBELET_CGROUP_ROOT:-}" ]]; then
    printf 'cgroupsPerQOS: true\ncgroupRoot: %s\nenforceNodeAllocatable: [pods]\n' "${KK_KUBELET_CGROUP_ROOT}"
  else
    printf 'cgroupsPerQOS: false\nenforceNodeAllocatable: []\n'
  fi)
clusterDNS:
- 10.96.0.10
clusterDomain: cluster.local
containerRuntimeEndpoint: $2
cpuManagerReconcilePeriod: 0s
evictionPressureTransitionPeriod: 0s
$(kk_eviction_hard_yaml)
failSwapOn: false
failCgroupV1: false
fileCheckFrequency: 0s
healthzBindAddress: 127.0.0.1
healthzPort: $6
httpCheckFrequency: 0s
imageMaximumGCAge: 0s
imageMinimumGCAge: 0s
logging:
  flushFrequency: 0
  options:
    json:
      infoBufferSize: "0"
    text:
      infoBufferSize: "0"
  verbosity: 0
memorySwap: {}
nodeStatusReportFrequency: 0s
nodeStatusUpdateFrequency: 0s
podLogsDir: $3
port: $5
resolvConf: /etc/resolv.conf
rotateCertificates: true
runtimeRequestTimeout: 0s
shutdownGracePeriod: 0s
shutdownGracePeriodCriticalPods: 0s
staticPodPath: $4
streamingConnectionIdleTimeout: 0s
syncFrequency: 0s
volumeStatsAggPeriod: 0s
EOF
  shift 6
  local line
  for line in "$@"; do printf '%s\n' "${line}"; done
}

# kk_cgroup_dirs ROOT: the directories of the cgroup ROOT (an absolute
# cgroup path such as /kkconf-123) in every hierarchy: once under cgroup v2;
# under cgroup v1, in every v1 hierarchy and in a hybrid host's unified one,
# where runc mirrors the tree.
kk_cgroup_dirs() {
  local root="$1" h
  if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
    printf '%s\n' "/sys/fs/cgroup${root}"
    return 0
  fi
  while read -r _ h _; do
    printf '%s\n' "${h}${root}"
  done < <(awk '$3 == "cgroup" || $3 == "cgroup2" { print $1, $2, $3 }' /proc/self/mounts)
}

# kk_make_cgroup_root ROOT: make the cgroup ROOT in every hierarchy
# (kk_cgroup_dirs), its cpuset filled from the parent's as cgroup v1 needs
# before a task may join: a kubelet's cgroupRoot of its own, so that a
# harness's pod cgroups never land at the host's /kubepods.
kk_make_cgroup_root() {
  local h n=0
  while read -r h; do
    mkdir -p "${h}"
    if [[ -f "${h}/cpuset.cpus" && -z "$(cat "${h}/cpuset.cpus")" ]]; then
      cat "$(dirname "${h}")/cpuset.cpus" >"${h}/cpuset.cpus"
      cat "$(dirname "${h}")/cpuset.mems" >"${h}/cpuset.mems"
    fi
    n=$((n + 1))
  done < <(kk_cgroup_dirs "$1")
  kk_log "cgroup root $1 in ${n} hierarchies"
}

# kk_remove_cgroup_root ROOT: remove the cgroup tree ROOT in every
# hierarchy, leaves first; a cgroup that still holds a task stays, is
# named, and makes the status 1.
kk_remove_cgroup_root() {
  local h left=0
  while read -r h; do
    [[ -d "${h}" ]] || continue
    find "${h}" -depth -type d -exec rmdir {} + 2>/dev/null || true
    [[ ! -d "${h}" ]] || { kk_log "cgroup ${h} not removed: it still holds tasks"; left=1; }
  done < <(kk_cgroup_dirs "$1")
  return "${left}"
}

# kk_approve_serving_csrs [USER]: approve, with the caller's kubectl
# function, every pending kubernetes.io/kubelet-serving CSR (of USER only,
# when given), as an operator or a serving-certificate approver does:
# kube-controller-manager approves only client certificates.
kk_approve_serving_csrs() {
  local user="${1:-}" name
  for name in $(kubectl get csr -o jsonpath='{range .items[?(@.spec.signerName=="kubernetes.io/kubelet-serving")]}{.metadata.name}{"\t"}{.status.conditions[*].type}{"\t"}{.spec.username}{"\n"}{end}' 2>/dev/null |
    awk -F'\t' -v u="${user}" '$2 == "" && (u == "" || $3 == u) { print $1 }'); do
    kubectl certificate approve "${name}" >/dev/null 2>&1 && kk_log "approved serving CSR ${name}"
  done
  return 0
}

# kk_node_ip: the host's IPv4 address on its default route, for upstream
# kubelet's --node-ip. Without it, a standalone kubelet resolves its node name
# (its hostname, or --hostname-override) by DNS each time it builds its Node
# (on every pod admission); a name that is not in /etc/hosts then costs a DNS
# round trip, or a resolver timeout on a machine without DNS.
kk_node_ip() {
  local ip
  ip="$(ip -4 route get 1.1.1.1 2>/dev/null | sed -nE 's/.* src ([0-9.]+).*/\1/p')"
  [[ -n "${ip}" ]] || ip="$(hostname -I 2>/dev/null | awk '{ print $1 }')"
  [[ -n "${ip}" ]] || kk_die "no IPv4 address on the default route for --node-ip"
  printf '%s\n' "${ip}"
}

# kk_write_kubelet_config FILE STATIC_POD_DIR POD_LOGS_DIR ENDPOINT READ_ONLY_PORT PORT [LINE...]:
# write the KubeletConfiguration of a standalone upstream kubelet on 127.0.0.1:
# static pods from STATIC_POD_DIR, pod logs in POD_LOGS_DIR, the runtime at
# ENDPOINT, /pods on READ_ONLY_PORT, its main (authenticated) port on PORT,
# healthz off, anonymous requests allowed; no swap check, cgroup v1 accepted,
# cgroupfs without QoS cgroups (no systemd here). Each LINE is appended
# (further fields).
kk_write_kubelet_config() {
  local file="$1" static="$2" logs="$3" endpoint="$4" ro_port="$5" port="$6" line
  shift 6
  {
    cat <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: ${static}
podLogsDir: ${logs}
containerRuntimeEndpoint: ${endpoint}
address: 127.0.0.1
readOnlyPort: ${ro_port}
port: ${port}
healthzPort: 0
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
failSwapOn: false
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
resolvConf: /etc/resolv.conf
EOF
    for line in "$@"; do printf '%s\n' "${line}"; done
  } >"${file}"
}

# kk_build_image OUT REF CONFIG LAYER_DIR...: write the OCI archive OUT of
# image REF (hack/oci-image.sh) unless OUT was built from identical inputs:
# its cache key, in OUT.inputs, covers the reference, the config,
# oci-image.sh itself and every file's path, mode, size, link count,
# owner, symlink target and content (hashed once per inode: a busybox tree
# is hundreds of hard links). KK_REBUILD=1 writes it anyway.
kk_build_image() {
  local out="$1" ref="$2" config="$3" stamp key dir oci
  shift 3
  oci="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/oci-image.sh"
  stamp="${out}.inputs"
  key="$( {
    printf '%s\n%s\n' "${ref}" "${config}"
    sha256sum <"${oci}"
    for dir in "$@"; do
      (cd "${dir}" && find . -printf '%p %m %s %n %U %G %l\n' | sort &&
        find . -type f -printf '%i\t%p\n' | sort -t$'\t' -k1,1n -u | cut -f2 | sort |
        xargs -r -d '\n' sha256sum)
    done
  } | sha256sum | cut -d' ' -f1)"
  if [[ "${KK_REBUILD:-0}" != 1 && -f "${out}" && "$(cat "${stamp}" 2>/dev/null)" == "${key}" ]]; then
    kk_log "image ${ref}: cached ${out}"
    return 0
  fi
  kk_log "image ${ref}: writing ${out}"
  nice -n 10 "${oci}" "${out}" "${ref}" "${config}" "$@" >/dev/null
  printf '%s\n' "${key}" >"${stamp}"
}

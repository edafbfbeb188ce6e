#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# hack/containerd-setup.sh: prepare a fresh Debian 12 machine (run as root) to
# run a real containerd CRI runtime for kubeletkit's integration tests and for
# the critest CRI validation suite. Idempotent; a second run only checks the
# caches. It:
#   1. installs containerd, runc, containernetworking-plugins, iptables and
#      busybox-static with apt-get (skipped when they are already present);
#   2. builds the static pause, webserver and nnp binaries from hack/pause,
#      hack/webserver and hack/nnp (standard library only);
#   3. writes OCI image archives into $KK_WORK/images:
#        busybox.oci.tar          docker.io/local/busybox:1 (busybox-static rootfs)
#        pause.oci.tar            docker.io/local/pause:1   (the pause binary)
#        webserver.oci.tar        docker.io/local/webserver:1 (busybox + hack/webserver
#                                 as "nginx" on :80, stands in for critest's
#                                 nginx/httpd images)
#        hostnet-webserver.oci.tar docker.io/local/hostnet-webserver:1 (same, on
#                                 127.0.0.1:12003 for host-network specs)
#        nonewprivs.oci.tar       docker.io/local/nonewprivs:1 (hack/nnp, setuid root)
#        predefined-group.oci.tar docker.io/local/predefined-group:1 (busybox with
#                                 user 1000 in group 50000, as critest expects)
#   4. builds crictl and critest from sigs.k8s.io/cri-tools (Go module proxy)
#      into $KK_WORK/bin, cached by version;
#   5. with KK_CONTAINERD_VERSION (2.x), builds containerd, its runc shim and
#      ctr from github.com/containerd/containerd/v2 at that version into
#      $KK_APISERVER_CACHE/containerd-v<version>/ (lib.sh kk_build_containerd),
#      cached by version. apt's containerd is still installed (its runc and
#      the CNI plugins are used by both).
#
# Environment variables:
#   KK_WORK               work/cache dir (default /tmp/kubeletkit-e2e)
#   KK_CRI_TOOLS_VERSION  cri-tools version to build (default v1.34.0)
#   KK_SKIP_APT=1         never run apt-get (fail if something is missing)
#   KK_FORCE_APT=1        run apt-get even when everything looks installed
#   KK_REBUILD=1          ignore the caches and rebuild images and binaries
#   KK_CONTAINERD_VERSION a containerd 2.x version to build (default empty:
#                         Debian's containerd 1.6 only)
#   KK_APISERVER_CACHE    where the built containerd is cached (lib.sh)
set -euo pipefail

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "${HACK_DIR}/lib.sh"

APT_PACKAGES=(containerd runc containernetworking-plugins iptables busybox-static)

[[ "$(id -u)" == 0 ]] || kk_die "must run as root"

# ---------------------------------------------------------------- packages
packages_present() {
  local b
  for b in containerd containerd-shim-runc-v2 ctr runc iptables; do
    command -v "${b}" >/dev/null 2>&1 || return 1
  done
  for b in bridge host-local loopback portmap; do
    [[ -x "/usr/lib/cni/${b}" ]] || return 1
  done
  # busybox-static (not the dynamically linked "busybox" package) provides a
  # /bin/busybox that runs inside an otherwise empty image.
  [[ "$(dpkg-query -W -f='${db:Status-Status}' busybox-static 2>/dev/null || true)" == installed ]] || return 1
  [[ -x /bin/busybox ]]
}

install_packages() {
  if [[ "${KK_FORCE_APT:-0}" != 1 ]] && packages_present; then
    kk_log "packages: containerd/runc/CNI plugins/busybox-static already installed"
    return 0
  fi
  [[ "${KK_SKIP_APT:-0}" != 1 ]] || kk_die "packages missing and KK_SKIP_APT=1"
  kk_log "packages: apt-get install ${APT_PACKAGES[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${APT_PACKAGES[@]}"
  packages_present || kk_die "packages still missing after apt-get install"
}

# ---------------------------------------------------------------- Go tools
# build_go_tool NAME: build hack/NAME/main.go (standard library only) into a
# static $KK_BUILD/NAME/NAME.
build_go_tool() {
  local name="$1" out src tmp
  out="${KK_BUILD}/${name}/${name}"
  src="${HACK_DIR}/${name}/main.go"
  if [[ "${KK_REBUILD:-0}" != 1 && -x "${out}" && "${out}" -nt "${src}" ]]; then
    kk_log "${name}: cached ${out}"
    return 0
  fi
  kk_log "${name}: building ${out}"
  # Build from a private copy with its own go.mod so the build neither depends
  # on nor touches the state of the repository's module (go.mod/go.work).
  tmp="$(mktemp -d)"
  cp "${src}" "${tmp}/main.go"
  printf 'module kubeletkit.local/%s\n\ngo 1.21\n' "${name}" >"${tmp}/go.mod"
  mkdir -p "$(dirname "${out}")"
  (cd "${tmp}" && CGO_ENABLED=0 GOWORK=off GOFLAGS="" GOTOOLCHAIN=local \
    go build -trimpath -ldflags='-s -w -buildid=' -o "${out}.new" .)
  mv -f "${out}.new" "${out}"
  rm -rf "${tmp}"
}

# ---------------------------------------------------------------- images
IMAGE_PATH_ENV='"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"'

stage_busybox_rootfs() {
  local d="$1" p
  rm -rf "${d}"
  mkdir -p "${d}"/{bin,sbin,usr/bin,usr/sbin,etc,root,home,proc,sys,dev,var/run,var/www,tmp}
  chmod 1777 "${d}/tmp"
  chmod 0700 "${d}/root"
  install -m 0755 /bin/busybox "${d}/bin/busybox"
  # The equivalent of `busybox --install`, rooted in the staging dir. Hard
  # links (as in the upstream busybox image) rather than symlinks, so that a
  # CRI MaskedPaths entry such as /bin/ls masks only that name and not
  # /bin/busybox itself (which would break every command in the container).
  while IFS= read -r p; do
    [[ "${p}" == */* && "${p}" != bin/busybox ]] || continue
    [[ -e "${d}/${p}" || -L "${d}/${p}" ]] || ln "${d}/bin/busybox" "${d}/${p}"
  done < <(/bin/busybox --list-full | sort)
  # Debian's busybox-static has no pgrep or ipcs applets; critest execs both.
  cat >"${d}/usr/bin/pgrep" <<'EOF'
#!/bin/sh
# Minimal pgrep PATTERN (kubeletkit test image): print the PIDs of processes
# whose name contains PATTERN; exit 1 when there are none.
[ $# -eq 1 ] || { echo "usage: pgrep PATTERN" >&2; exit 2; }
found=1
for d in /proc/[0-9]*; do
  pid=${d#/proc/}
  [ "$pid" = "$$" ] && continue
  read -r name <"$d/comm" 2>/dev/null || continue
  case "$name" in *"$1"*) echo "$pid"; found=0 ;; esac
done
exit $found
EOF
  cat >"${d}/usr/bin/ipcs" <<'EOF'
#!/bin/sh
# Minimal ipcs [-m] (kubeletkit test image): list the System V shared memory
# segments of this IPC namespace, from /proc/sysvipc/shm.
echo
echo "------ Shared Memory Segments --------"
echo "key        shmid      owner      perms      bytes      nattch     status"
if [ -r /proc/sysvipc/shm ]; then
  while read -r key shmid perms size cpid lpid nattch uid rest; do
    [ "$key" = key ] && continue
    printf '%-10s %-10s %-10s %-10s %-10s %-10s\n' "$key" "$shmid" "$uid" "$perms" "$size" "$nattch"
  done </proc/sysvipc/shm
fi
echo
EOF
  chmod 0755 "${d}/usr/bin/pgrep" "${d}/usr/bin/ipcs"
  cat >"${d}/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
daemon:x:1:1:daemon:/usr/sbin:/bin/false
bin:x:2:2:bin:/bin:/bin/false
sys:x:3:3:sys:/dev:/bin/false
www-data:x:33:33:www-data:/var/www:/bin/false
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
EOF
  cat >"${d}/etc/group" <<'EOF'
root:x:0:
daemon:x:1:
bin:x:2:
sys:x:3:
adm:x:4:
tty:x:5:
disk:x:6:
wheel:x:10:root
www-data:x:33:
users:x:100:
nobody:x:65534:
EOF
  chmod 0644 "${d}/etc/passwd" "${d}/etc/group"
}

# build_image NAME REF CONFIG LAYER_DIR...: write $KK_IMAGES/NAME.oci.tar
# unless a cached archive built from identical inputs exists (lib.sh).
build_image() {
  local name="$1"
  shift
  kk_build_image "${KK_IMAGES}/${name}.oci.tar" "$@"
}

build_images() {
  local r="${KK_BUILD}/rootfs"
  mkdir -p "${r}" "${KK_IMAGES}"

  stage_busybox_rootfs "${r}/busybox"
  build_image busybox "${KK_BUSYBOX_IMAGE}" \
    "{\"Env\":[${IMAGE_PATH_ENV}],\"Cmd\":[\"sh\"],\"WorkingDir\":\"/\"}" "${r}/busybox"

  rm -rf "${r}/pause" && mkdir -p "${r}/pause"
  install -m 0755 "${KK_BUILD}/pause/pause" "${r}/pause/pause"
  build_image pause "${KK_PAUSE_IMAGE}" \
    "{\"Env\":[${IMAGE_PATH_ENV}],\"Entrypoint\":[\"/pause\"],\"WorkingDir\":\"/\"}" "${r}/pause"

  # Web servers for critest's networking, streaming, multi-container and
  # PID-namespace specs: busybox plus hack/webserver installed as
  # /usr/sbin/nginx (see its doc comment for what it mimics).
  rm -rf "${r}/webserver" && mkdir -p "${r}/webserver/usr/sbin" "${r}/webserver/www"
  install -m 0755 "${KK_BUILD}/webserver/webserver" "${r}/webserver/usr/sbin/nginx"
  printf '<html><body>kubeletkit test web server</body></html>\n' >"${r}/webserver/www/index.html"
  chmod 0755 "${r}/webserver/www" && chmod 0644 "${r}/webserver/www/index.html"
  build_image webserver "${KK_WEBSERVER_IMAGE}" \
    "{\"Env\":[${IMAGE_PATH_ENV}],\"Entrypoint\":[\"/usr/sbin/nginx\"],\"Cmd\":[\"-listen\",\":80\",\"master process\"],\"ExposedPorts\":{\"80/tcp\":{}},\"WorkingDir\":\"/\"}" \
    "${r}/busybox" "${r}/webserver"
  # The host-network variant listens on 127.0.0.1:12003 (critest's port).
  build_image hostnet-webserver "${KK_HOSTNET_WEBSERVER_IMAGE}" \
    "{\"Env\":[${IMAGE_PATH_ENV}],\"Entrypoint\":[\"/usr/sbin/nginx\"],\"Cmd\":[\"-listen\",\"127.0.0.1:12003\",\"master process\"],\"WorkingDir\":\"/\"}" \
    "${r}/busybox" "${r}/webserver"

  # critest's nonewprivs image: a setuid-root program printing its euid.
  rm -rf "${r}/nonewprivs" && mkdir -p "${r}/nonewprivs"
  install -m 4755 "${KK_BUILD}/nnp/nnp" "${r}/nonewprivs/nnp"
  build_image nonewprivs "${KK_NONEWPRIVS_IMAGE}" \
    "{\"Env\":[${IMAGE_PATH_ENV}],\"Entrypoint\":[\"/nnp\"],\"WorkingDir\":\"/\"}" "${r}/nonewprivs"

  # critest's image-predefined-group: default-user (uid 1000) is a member of
  # group-defined-in-image (gid 50000); the image runs as user 1000.
  rm -rf "${r}/predefined-group" && mkdir -p "${r}/predefined-group/etc" "${r}/predefined-group/home/default-user"
  cp "${r}/busybox/etc/passwd" "${r}/busybox/etc/group" "${r}/predefined-group/etc/"
  printf 'default-user:x:1000:1000:Linux User,,,:/home/default-user:/bin/sh\n' >>"${r}/predefined-group/etc/passwd"
  printf 'default-user:x:1000:\ngroup-defined-in-image:x:50000:default-user\n' >>"${r}/predefined-group/etc/group"
  build_image predefined-group "${KK_PREDEFINED_GROUP_IMAGE}" \
    "{\"Env\":[${IMAGE_PATH_ENV}],\"Cmd\":[\"sh\"],\"User\":\"1000\",\"WorkingDir\":\"/\"}" \
    "${r}/busybox" "${r}/predefined-group"
}

# ---------------------------------------------------------------- cri-tools
build_cri_tools() {
  local stamp="${KK_BIN}/.cri-tools-version" json dir src
  if [[ "${KK_REBUILD:-0}" != 1 && -x "${KK_BIN}/crictl" && -x "${KK_BIN}/critest" &&
    "$(cat "${stamp}" 2>/dev/null)" == "${KK_CRI_TOOLS_VERSION}" ]]; then
    kk_log "cri-tools ${KK_CRI_TOOLS_VERSION}: cached ${KK_BIN}/crictl ${KK_BIN}/critest"
    return 0
  fi
  kk_log "cri-tools ${KK_CRI_TOOLS_VERSION}: downloading module"
  mkdir -p "${KK_BIN}" "${KK_BUILD}"
  # Run outside any module so the repository's go.mod/go.work are not involved.
  json="$(cd "${KK_BUILD}" && GOWORK=off GOTOOLCHAIN=local GOFLAGS=-mod=mod \
    GONOSUMDB=sigs.k8s.io/cri-tools \
    go mod download -json "sigs.k8s.io/cri-tools@${KK_CRI_TOOLS_VERSION}")"
  dir="$(printf '%s\n' "${json}" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' | head -n1)"
  [[ -n "${dir}" && -d "${dir}/cmd/critest" ]] || kk_die "go mod download gave no usable Dir: ${json}"

  # The module cache is read-only: build from a writable copy.
  src="${KK_BUILD}/cri-tools-${KK_CRI_TOOLS_VERSION}"
  rm -rf "${src}"
  cp -r "${dir}" "${src}"
  chmod -R u+w "${src}"
  kk_log "cri-tools: building crictl"
  (cd "${src}" && GOWORK=off GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0 \
    go build -trimpath -o "${KK_BIN}/crictl.new" ./cmd/crictl)
  kk_log "cri-tools: building critest"
  (cd "${src}" && GOWORK=off GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0 \
    go test -c -trimpath -o "${KK_BIN}/critest.new" ./cmd/critest)
  mv -f "${KK_BIN}/crictl.new" "${KK_BIN}/crictl"
  mv -f "${KK_BIN}/critest.new" "${KK_BIN}/critest"
  printf '%s\n' "${KK_CRI_TOOLS_VERSION}" >"${stamp}"
  rm -rf "${src}"
}

main() {
  local t0=${SECONDS}
  mkdir -p "${KK_WORK}"
  install_packages
  build_go_tool pause
  build_go_tool webserver
  build_go_tool nnp
  build_images
  build_cri_tools
  [[ -z "${KK_CONTAINERD_VERSION}" ]] || kk_build_containerd
  kk_write_crictl_yaml
  kk_log "setup done in $((SECONDS - t0))s; work dir ${KK_WORK}"
}

main "$@"

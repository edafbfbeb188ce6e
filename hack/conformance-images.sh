#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# hack/conformance-images.sh: the container images that the [NodeConformance]
# specs of upstream's node e2e suite (k8s.io/kubernetes/test/e2e_node at
# KK_K8S_VERSION) and the [Conformance] specs of its cluster suite
# (k8s.io/kubernetes/test/e2e) run, built offline, plus a local registry for
# the specs that pull. Used by hack/conformance.sh and hack/cluster.sh images.
# Needs root, a Debian 12 machine, Go, and hack/containerd-setup.sh run for the
# same KK_WORK (it builds hack/pause, hack/webserver and hack/nnp, which three
# images reuse).
#
# Usage: conformance-images.sh build | import | registry-start | registry-stop | env
#
#   build           Writes one OCI archive per image into
#                   $KK_WORK/conformance/images/<name>.oci.tar, with <name>.oci.tar.ref
#                   holding the image's name (hack/oci-image.sh,
#                   deterministic; an archive is rewritten only when its inputs
#                   change) and $KK_WORK/conformance/repo-list.yaml, the
#                   KUBE_TEST_REPO_LIST file that points every upstream registry
#                   at the local one, so the names the suite computes are the names
#                   the archives carry. Also writes $KK_WORK/conformance/env.
#   import          Imports every archive into the containerd of $KK_WORK
#                   (hack/containerd-start.sh must be running) under its name.
#   registry-start  Needs no network: build made crane. Starts `crane registry serve` on 127.0.0.1:$PORT (setsid, PID in
#                   $KK_WORK/conformance/registry.pid, log in registry.log) and
#                   pushes every archive to it. containerd pulls from a loopback
#                   registry over plain HTTP without any hosts.toml. Reuses a
#                   running registry (and pushes again: it keeps manifests in memory).
#   registry-stop   Stops the PID in the pid file, only while it runs our crane
#                   with our address. Safe to run at any time.
#   env             Prints $KK_WORK/conformance/env (see below).
#
# $KK_WORK/conformance/env has lines "export KEY=VALUE": KUBE_TEST_REPO_LIST,
# KK_CONFORMANCE_REGISTRY (127.0.0.1:PORT), KK_CONFORMANCE_IMAGES (the archive dir),
# KK_CONFORMANCE_PAUSE_IMAGE (the suite's pause image after remapping).
#
# What is built, and from what (hack/README.md says which specs use each image
# and how close it is to upstream's):
#   busybox 1.37.0-1      upstream's busybox 1.37.0 source (the orig tarball of Debian
#                         trixie's busybox source package, sha256 pinned below), built
#                         static with `make defconfig`, as the docker library's image;
#                         every applet hard-linked in /bin.
#   agnhost 2.63.0, 2.55  k8s.io/kubernetes/test/images/agnhost built from hack/e2enode
#                         at KK_K8S_VERSION, on the busybox rootfs (upstream's base is
#                         alpine, whose userland is busybox) plus Debian 12's bash, curl,
#                         nc (netcat-openbsd), ip and ss (iproute2), ipcs (util-linux),
#                         dig and nslookup (bind9-dnsutils), getent (libc-bin) with their
#                         shared libraries, an /etc/nsswitch.conf of "hosts: files dns"
#                         (musl's order, which the DNS specs' `getent hosts` relies on),
#                         an /etc/os-release naming Alpine Linux as what it stands in for,
#                         /var/registry/pause (tag "testing": our pause image) for
#                         `agnhost fake-registry-server`, porter's certificate, /uploads,
#                         user-defined-in-image (1000) in group-defined-in-image (50000).
#   nautilus 1.8, kitten 1.8  the agnhost image plus /nautilus.jpg or /kitten.jpg and
#                         /data.json from the module's test/images/{nautilus,kitten}/html,
#                         Cmd test-webserver (serves / on :80), as upstream's.
#   pause 3.10.2          hack/pause as /pause, user 65535:65535.
#   nginx 1.15-4, 1.27-0  the busybox rootfs plus hack/webserver as /usr/sbin/nginx on :80.
#   nonewprivs 1.4        the busybox rootfs plus hack/nnp as setuid /usr/local/bin/nnp.
#   nonroot 1.5           a Debian 12 minbase rootfs (debootstrap), user 1234.
#   glibc-dns-testing 2.0.0  the same Debian 12 rootfs (bookworm-slim plus dnsutils
#                         upstream; the cluster suite's "jessie" DNS querier).
#   sample-apiserver 1.29.2  k8s.io/sample-apiserver at KK_K8S_VERSION's staging version
#                         (v0.36.3), built in a throwaway module, as /sample-apiserver on
#                         the busybox rootfs (upstream's is alpine).
#   etcd 3.6.8-0          go.etcd.io/etcd/server/v3 at ETCD_VERSION (manifest.go's tag,
#                         checked) as /usr/local/bin/etcd, nothing else (upstream's is
#                         distroless).
# The cluster suite's [Conformance] specs (v1.36.3) run busybox, agnhost 2.63.0 and
# pause (most of them) and these: agnhost 2.55 (StatefulSet webservers: test-webserver,
# readiness on /localhost.crt, which the specs mv to /tmp and back; the Deployment, Pods
# lifecycle and kubectl diff specs), nginx 1.15-4 (garbage collector, ReplicationController
# lifecycle, Endpoints, EndpointSlices, PodTemplates, pod generation), glibc-dns-testing
# (the DNS specs' "jessie" querier: sh, seq, dig +search and +short, getent hosts; the
# agnhost querier runs the same), nautilus (kubectl Update Demo: data.json through the
# pod proxy), kitten (ImageVolume: /data.json and /etc/os-release of the image mounted
# as a volume, pulled with Always), sample-apiserver and etcd (Aggregator: the sample API
# server with etcd on 127.0.0.1:2379 in its pod). nginx 1.27-0, nonroot and nonewprivs
# only the node suite runs. manifest.go of v1.36.3 has no httpd image.
#
# Debian packages installed by build (apt-get, when missing): debootstrap, gcc, make,
# libc6-dev, bzip2. The busybox source comes from deb.debian.org (trixie's deb-src)
# through a private apt configuration under the cache; /etc/apt is not touched.
#
# Environment variables:
#   KK_WORK                       work dir (default /tmp/kubeletkit-e2e)
#   KK_APISERVER_CACHE            cache of slow builds (default $KK_WORK/bin); build keeps
#                                 conformance/{busybox-1.37.0,agnhost-<k8s version>,
#                                 debian-bookworm-<key>.tar,etcd-<version>,
#                                 sample-apiserver-<version>} and crane-<version> there
#   KK_CONFORMANCE_REGISTRY_PORT  the local registry's port on 127.0.0.1 (default 5055;
#                                 it is part of every image name, so a change rebuilds)
#   KK_CRANE_VERSION              github.com/google/go-containerregistry version (v0.22.1)
#   KK_SKIP_APT=1                 never run apt-get (fail if something is missing)
#   KK_REBUILD=1                  ignore the caches
set -euo pipefail

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "${HACK_DIR}/lib.sh"

PORT="${KK_CONFORMANCE_REGISTRY_PORT:-5055}"
REGISTRY="127.0.0.1:${PORT}"
CRANE_VERSION="${KK_CRANE_VERSION:-v0.22.1}"
CI_DIR="${KK_WORK}/conformance"
IMG_DIR="${CI_DIR}/images"
REPO_LIST="${CI_DIR}/repo-list.yaml"
CI_ENV="${CI_DIR}/env"
REG_PIDFILE="${CI_DIR}/registry.pid"
REG_LOG="${CI_DIR}/registry.log"
REG_DISK="${CI_DIR}/registry-blobs"
CACHE="${KK_APISERVER_CACHE}/conformance"
CRANE_BIN="${KK_APISERVER_CACHE}/crane-${CRANE_VERSION}"
E2ENODE_DIR="${HACK_DIR}/e2enode"

BUSYBOX_VERSION=1.37.0
# sha256 of busybox-1.37.0.tar.bz2 as released by busybox.net, which is Debian's
# busybox_1.37.0.orig.tar.bz2.
BUSYBOX_SHA256=3311dff32e746499f4df0d5df04d7eb396382d7e108bb9250e7b519b837043a4
# The etcd beside the sample API server in the Aggregator spec's pod: manifest.go
# names etcd:3.6.8-0 (checked by build).
ETCD_VERSION=v3.6.8
# The sample API server: k8s.io/sample-apiserver of KK_K8S_VERSION's minor
# (v1.36.3: v0.36.3), whatever tag manifest.go gives its image.
SAMPLE_APISERVER_VERSION="v0.${KK_K8S_VERSION#v1.}"
DEBIAN_MIRROR=http://deb.debian.org/debian
# The Debian 12 rootfs of nonroot and glibc-dns-testing, and the source of
# agnhost's extra tools.
DEBIAN_PACKAGES=dnsutils,curl,netcat-openbsd,iproute2
APT_PACKAGES=(debootstrap gcc make libc6-dev bzip2)
IMAGE_PATH_ENV='"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"'

# The upstream registries (manifest.go's RegistryList) and where they point.
# privateRegistry (needs gcr.io credentials) and invalidRegistry (must fail)
# keep upstream's values.
write_repo_list() {
  mkdir -p "${CI_DIR}"
  cat >"${REPO_LIST}.new" <<EOF
# Generated by hack/conformance-images.sh: KUBE_TEST_REPO_LIST for the node e2e suite.
promoterE2eRegistry: ${REGISTRY}/e2e-test-images
buildImageRegistry: ${REGISTRY}/build-image
gcEtcdRegistry: ${REGISTRY}
gcRegistry: ${REGISTRY}
sigStorageRegistry: ${REGISTRY}/sig-storage
dockerLibraryRegistry: ${REGISTRY}/library
cloudProviderGcpRegistry: ${REGISTRY}/cloud-provider-gcp
privateRegistry: gcr.io/k8s-authenticated-test
invalidRegistry: invalid.registry.k8s.io/invalid
EOF
  mv -f "${REPO_LIST}.new" "${REPO_LIST}"
  cat >"${CI_ENV}.new" <<EOF
# Generated by hack/conformance-images.sh. Source it or parse "export KEY=VALUE".
export KUBE_TEST_REPO_LIST=${REPO_LIST}
export KK_CONFORMANCE_REGISTRY=${REGISTRY}
export KK_CONFORMANCE_IMAGES=${IMG_DIR}
export KK_CONFORMANCE_PAUSE_IMAGE=${REGISTRY}/pause:3.10.2
EOF
  mv -f "${CI_ENV}.new" "${CI_ENV}"
}

# check_manifest MODULE_DIR NAME:TAG...: fail unless upstream's manifest.go
# (test/utils/image at KK_K8S_VERSION) names each image NAME with tag TAG, so
# that a version bump that moves a tag fails here, not in a spec that waits
# for an image nobody built.
check_manifest() {
  local manifest="$1/test/utils/image/manifest.go" pair
  shift
  [[ -f "${manifest}" ]] || kk_die "no ${manifest}"
  for pair in "$@"; do
    grep -Fq "\"${pair%%:*}\", \"${pair#*:}\"}" "${manifest}" ||
      kk_die "${manifest} does not name ${pair}: update this script's tags"
  done
}

# ---------------------------------------------------------------- inputs
install_packages() {
  local missing=() p
  for p in "${APT_PACKAGES[@]}"; do
    [[ "$(dpkg-query -W -f='${db:Status-Status}' "${p}" 2>/dev/null || true)" == installed ]] || missing+=("${p}")
  done
  ((${#missing[@]} == 0)) && return 0
  [[ "${KK_SKIP_APT:-0}" != 1 ]] || kk_die "packages missing and KK_SKIP_APT=1: ${missing[*]}"
  kk_log "packages: apt-get install ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" ||
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"; }
}

# busybox_source: print the path of the verified busybox orig tarball, fetched
# with apt-get from trixie's deb-src through a private apt configuration.
busybox_source() {
  local apt="${CACHE}/apt" tarball
  tarball="${apt}/busybox_${BUSYBOX_VERSION}.orig.tar.bz2"
  if [[ ! -f "${tarball}" ]] || ! sha256sum -c --status <<<"${BUSYBOX_SHA256}  ${tarball}"; then
    mkdir -p "${apt}/lists/partial" "${apt}/cache/archives/partial"
    printf 'deb-src %s trixie main\n' "${DEBIAN_MIRROR}" >"${apt}/sources.list"
    local opts=(-o "Dir::Etc::SourceList=${apt}/sources.list" -o Dir::Etc::SourceParts=/dev/null
      -o "Dir::State::Lists=${apt}/lists" -o "Dir::Cache=${apt}/cache" -o APT::Sandbox::User=root)
    kk_log "busybox: apt-get source --download-only busybox (Debian trixie, ${BUSYBOX_VERSION})"
    apt-get -q "${opts[@]}" update >&2
    # trixie's current busybox; the checksum below pins the upstream tarball.
    (cd "${apt}" && apt-get -q "${opts[@]}" source --download-only busybox >&2)
    sha256sum -c --status <<<"${BUSYBOX_SHA256}  ${tarball}" || kk_die "busybox source: ${tarball} missing or its sha256 is not ${BUSYBOX_SHA256}"
  fi
  printf '%s\n' "${tarball}"
}

# build_busybox: a static busybox from upstream's source with `make defconfig`,
# the configuration of the docker library's busybox image (its glibc variant).
build_busybox() {
  local out="${CACHE}/busybox-${BUSYBOX_VERSION}" src tmp
  if [[ "${KK_REBUILD:-0}" != 1 && -x "${out}" ]]; then
    kk_log "busybox ${BUSYBOX_VERSION}: cached ${out}"
    return 0
  fi
  src="$(busybox_source)"
  tmp="$(mktemp -d)"
  tar -xjf "${src}" -C "${tmp}"
  kk_log "busybox ${BUSYBOX_VERSION}: building (defconfig, static; about 2 minutes on 2 cores)"
  (
    cd "${tmp}/busybox-${BUSYBOX_VERSION}"
    export KCONFIG_NOTIMESTAMP=1
    make defconfig >/dev/null
    # Static, as the docker library's image. tc does not build against
    # Debian 12's kernel headers (CBQ was removed from them).
    sed -i -e 's/^# CONFIG_STATIC is not set$/CONFIG_STATIC=y/' -e 's/^CONFIG_TC=y$/# CONFIG_TC is not set/' .config
    yes '' | make oldconfig >/dev/null
    nice -n 10 make -j"$(nproc)" busybox >"${tmp}/build.log" 2>&1 || { tail -n 30 "${tmp}/build.log" >&2; exit 1; }
  ) || kk_die "busybox build failed"
  mkdir -p "${CACHE}"
  install -m 0755 "${tmp}/busybox-${BUSYBOX_VERSION}/busybox" "${out}.new"
  mv -f "${out}.new" "${out}"
  rm -rf "${tmp}"
  kk_log "busybox: $("${out}" | head -n1)"
}

# build_debian_rootfs: a Debian 12 minbase rootfs with DEBIAN_PACKAGES, as a
# tar in the cache (the key covers the suite, mirror and package list).
DEBIAN_TAR=""
build_debian_rootfs() {
  local key tmp
  key="$(printf 'bookworm minbase %s %s\n' "${DEBIAN_MIRROR}" "${DEBIAN_PACKAGES}" | sha256sum | cut -c1-12)"
  DEBIAN_TAR="${CACHE}/debian-bookworm-${key}.tar"
  if [[ "${KK_REBUILD:-0}" != 1 && -f "${DEBIAN_TAR}" ]]; then
    kk_log "debian rootfs: cached ${DEBIAN_TAR}"
    return 0
  fi
  tmp="$(mktemp -d "${KK_WORK}/debootstrap.XXXXXX")"
  kk_log "debian rootfs: debootstrap --variant=minbase --include=${DEBIAN_PACKAGES} bookworm (about 40s)"
  debootstrap --variant=minbase --include="${DEBIAN_PACKAGES}" bookworm "${tmp}/root" "${DEBIAN_MIRROR}" \
    >"${tmp}/debootstrap.log" 2>&1 || { tail -n 30 "${tmp}/debootstrap.log" >&2; kk_die "debootstrap failed"; }
  # What an image must not carry: downloaded packages and lists, device nodes
  # (the runtime makes /dev), and the build host's name and resolver.
  (
    cd "${tmp}/root"
    rm -rf var/cache/apt/archives/*.deb var/cache/apt/*.bin var/lib/apt/lists/* var/log/* dev/* proc/* sys/* \
      etc/hostname etc/resolv.conf etc/machine-id debootstrap
    : >etc/machine-id
  )
  mkdir -p "${CACHE}"
  tar --sort=name --numeric-owner -C "${tmp}/root" -cf "${DEBIAN_TAR}.new" .
  mv -f "${DEBIAN_TAR}.new" "${DEBIAN_TAR}"
  rm -rf "${tmp}"
}

# build_agnhost: agnhost at KK_K8S_VERSION from hack/e2enode's module (its
# go.mod has a tool line for it); never touches go.mod or go.sum.
AGNHOST_BIN=""
build_agnhost() {
  AGNHOST_BIN="${CACHE}/agnhost-${KK_K8S_VERSION}"
  if [[ "${KK_REBUILD:-0}" != 1 && -x "${AGNHOST_BIN}" ]]; then
    kk_log "agnhost ${KK_K8S_VERSION}: cached ${AGNHOST_BIN}"
    return 0
  fi
  grep -Eq "^require k8s.io/kubernetes ${KK_K8S_VERSION//./\\.}( |\$)" "${E2ENODE_DIR}/go.mod" ||
    kk_die "KK_K8S_VERSION=${KK_K8S_VERSION} is not what ${E2ENODE_DIR}/go.mod requires"
  kk_log "agnhost ${KK_K8S_VERSION}: building"
  mkdir -p "${CACHE}"
  (cd "${E2ENODE_DIR}" && GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0 nice -n 10 \
    go build -trimpath -ldflags='-s -w -buildid=' -o "${AGNHOST_BIN}.new" k8s.io/kubernetes/test/images/agnhost) ||
    kk_die "agnhost build failed"
  mv -f "${AGNHOST_BIN}.new" "${AGNHOST_BIN}"
}

# build_go_main MODULE VERSION PKG OUT: the command PKG of MODULE at VERSION,
# static and trimmed, into OUT unless OUT exists (KK_REBUILD=1 builds it
# anyway). It builds in a throwaway module that requires MODULE, so that no
# repository go.mod or go.work is involved, and so that MODULE's own replace
# directives (etcd's server module has some) are ignored instead of failing
# as `go install PKG@VERSION` fails on them.
build_go_main() {
  local module="$1" version="$2" pkg="$3" out="$4" tmp name
  name="$(basename "${out}")"
  if [[ "${KK_REBUILD:-0}" != 1 && -x "${out}" ]]; then
    kk_log "${name}: cached ${out}"
    return 0
  fi
  tmp="$(mktemp -d)"
  kk_log "${name}: building ${pkg} from ${module}@${version}"
  mkdir -p "$(dirname "${out}")"
  (cd "${tmp}" && printf 'module kubeletkit.local/build\n' >go.mod &&
    GOWORK=off GOFLAGS=-mod=mod go get "${module}@${version}" >&2 &&
    GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 nice -n 10 \
      go build -trimpath -ldflags='-s -w -buildid=' -o "${out}.new" "${pkg}") ||
    { rm -rf "${tmp}"; kk_die "${name}: build failed"; }
  mv -f "${out}.new" "${out}"
  rm -rf "${tmp}"
}

# ---------------------------------------------------------------- rootfs
# stage_busybox ROOT: the docker library busybox layout: every applet a hard
# link of /bin/busybox in /bin, and its /etc/passwd and /etc/group.
stage_busybox() {
  local d="$1" a
  rm -rf "${d}"
  mkdir -p "${d}"/{bin,etc,home,root,tmp,usr/sbin,var/spool/mail,var/www}
  chmod 1777 "${d}/tmp"
  chmod 0700 "${d}/root"
  install -m 0755 "${CACHE}/busybox-${BUSYBOX_VERSION}" "${d}/bin/busybox"
  while IFS= read -r a; do
    [[ -n "${a}" && "${a}" != busybox && ! -e "${d}/bin/${a}" ]] && ln "${d}/bin/busybox" "${d}/bin/${a}"
  done < <("${d}/bin/busybox" --list | sort)
  cat >"${d}/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
daemon:x:1:1:daemon:/usr/sbin:/bin/false
bin:x:2:2:bin:/bin:/bin/false
sys:x:3:3:sys:/dev:/bin/false
sync:x:4:100:sync:/bin:/bin/sync
mail:x:8:8:mail:/var/spool/mail:/bin/false
www-data:x:33:33:www-data:/var/www:/bin/false
operator:x:37:37:Operator:/var:/bin/false
nobody:x:65534:65534:nobody:/home:/bin/false
EOF
  cat >"${d}/etc/group" <<'EOF'
root:x:0:
daemon:x:1:
bin:x:2:
sys:x:3:
adm:x:4:
tty:x:5:
disk:x:6:
lp:x:7:
mail:x:8:
kmem:x:9:
wheel:x:10:root
cdrom:x:11:
dialout:x:18:
floppy:x:19:
video:x:28:
audio:x:29:
tape:x:30:
www-data:x:33:
operator:x:37:
staff:x:50:
users:x:100:
nogroup:x:65534:
EOF
  chmod 0644 "${d}/etc/passwd" "${d}/etc/group"
}

# stage_tools DEBIAN_ROOT OUT SRC:DEST...: copy each Debian binary SRC (a path
# in DEBIAN_ROOT) to OUT/DEST, with every shared library it loads at the same
# path, so that it runs on the busybox rootfs.
stage_tools() {
  local deb="$1" out="$2" pair src dest lib
  shift 2
  rm -rf "${out}"
  for pair in "$@"; do
    src="${pair%%:*}" dest="${pair#*:}"
    [[ -x "${deb}${src}" ]] || kk_die "debian rootfs has no ${src}"
    mkdir -p "${out}$(dirname "${dest}")"
    install -m 0755 "${deb}${src}" "${out}${dest}"
    while IFS= read -r lib; do
      [[ -n "${lib}" ]] || continue
      mkdir -p "${out}$(dirname "${lib}")"
      cp -L "${deb}${lib}" "${out}${lib}"
    done < <(chroot "${deb}" ldd "${src}" | sed -nE 's#.*=> (/[^ ]+) .*#\1#p; s#^[[:space:]]*(/[^ ]+) .*#\1#p' | sort -u)
  done
}

# stage_fake_registry IMAGE_ARCHIVE OUT: the layout `agnhost
# fake-registry-server` serves from /var/registry: OUT/var/registry/pause with
# the image of IMAGE_ARCHIVE under the tag "testing".
stage_fake_registry() {
  local archive="$1" out="$2" tmp reg digest f
  tmp="$(mktemp -d)"
  tar -xf "${archive}" -C "${tmp}"
  reg="${out}/var/registry/pause"
  rm -rf "${out}"
  mkdir -p "${reg}/manifests" "${reg}/blobs"
  digest="$(sed -nE 's/.*"digest":"(sha256:[0-9a-f]{64})".*/\1/p' "${tmp}/index.json")"
  [[ -n "${digest}" ]] || kk_die "no manifest digest in ${archive}"
  printf '%s\n' "${digest}" >"${reg}/manifests/testing"
  for f in "${tmp}"/blobs/sha256/*; do
    f="$(basename "${f}")"
    if [[ "sha256:${f}" == "${digest}" ]]; then
      mkdir -p "${reg}/manifests/sha256/${f:0:2}/${f}"
      cp "${tmp}/blobs/sha256/${f}" "${reg}/manifests/sha256/${f:0:2}/${f}/data"
    else
      mkdir -p "${reg}/blobs/sha256/${f:0:2}/${f}"
      cp "${tmp}/blobs/sha256/${f}" "${reg}/blobs/sha256/${f:0:2}/${f}/data"
    fi
  done
  chmod -R a+rX "${out}/var"
  rm -rf "${tmp}"
}

# build_image NAME REF CONFIG LAYER_DIR...: write $IMG_DIR/NAME.oci.tar unless
# an archive built from identical inputs exists (lib.sh), and NAME.oci.tar.ref,
# the image's name, for import and registry-start.
build_image() {
  local name="$1" ref="$2"
  shift
  kk_build_image "${IMG_DIR}/${name}.oci.tar" "$@"
  printf '%s\n' "${ref}" >"${IMG_DIR}/${name}.oci.tar.ref"
}

# agnhost_config CMD STANDS_IN_FOR: the config of an image whose entrypoint
# is /agnhost, with upstream's ports, and a label that tells the images apart.
agnhost_config() {
  printf '{"Env":[%s],"Entrypoint":["/agnhost"],"Cmd":["%s"],%s,"WorkingDir":"/","Labels":{"io.kubeletkit.stands-in-for":"%s"}}' \
    "${IMAGE_PATH_ENV}" "$1" '"ExposedPorts":{"80/tcp":{},"8080/tcp":{},"8081/tcp":{},"9376/tcp":{},"5000/tcp":{}}' "$2"
}

build() {
  local t0=${SECONDS} r="${CI_DIR}/rootfs" e2e="${REGISTRY}/e2e-test-images" f
  for f in pause webserver nnp; do
    [[ -x "${KK_BUILD}/${f}/${f}" ]] || kk_die "${KK_BUILD}/${f}/${f} missing: run hack/containerd-setup.sh with KK_WORK=${KK_WORK}"
  done
  install_packages
  build_busybox
  build_debian_rootfs
  build_agnhost
  local mod
  mod="$(cd "${E2ENODE_DIR}" && GOWORK=off GOFLAGS=-mod=readonly go list -m -f '{{.Dir}}' k8s.io/kubernetes)"
  [[ -n "${mod}" ]] || kk_die "k8s.io/kubernetes is not in the Go module cache: run build with network access"
  check_manifest "${mod}" busybox:1.37.0-1 agnhost:2.63.0 agnhost:2.55 pause:3.10.2 nginx:1.15-4 nginx:1.27-0 \
    nonewprivs:1.4 nonroot:1.5 glibc-dns-testing:2.0.0 nautilus:1.8 kitten:1.8 sample-apiserver:1.29.2 \
    "etcd:${ETCD_VERSION#v}-0"
  build_go_main go.etcd.io/etcd/server/v3 "${ETCD_VERSION}" go.etcd.io/etcd/server/v3 "${CACHE}/etcd-${ETCD_VERSION}"
  build_go_main k8s.io/sample-apiserver "${SAMPLE_APISERVER_VERSION}" k8s.io/sample-apiserver \
    "${CACHE}/sample-apiserver-${SAMPLE_APISERVER_VERSION}"
  # crane serves the registry that registry-start runs inside conformance.sh's
  # network namespace, where the module proxy cannot be reached: it is built
  # here, with everything else that needs the network.
  build_go_main github.com/google/go-containerregistry "${CRANE_VERSION}" \
    github.com/google/go-containerregistry/cmd/crane "${CRANE_BIN}"
  mkdir -p "${IMG_DIR}" "${r}"
  write_repo_list

  stage_busybox "${r}/busybox"
  build_image busybox "${e2e}/busybox:1.37.0-1" \
    "{\"Env\":[${IMAGE_PATH_ENV}],\"Cmd\":[\"sh\"]}" "${r}/busybox"

  rm -rf "${r}/pause" && mkdir -p "${r}/pause"
  install -m 0755 "${KK_BUILD}/pause/pause" "${r}/pause/pause"
  build_image pause "${REGISTRY}/pause:3.10.2" \
    "{\"User\":\"65535:65535\",\"Env\":[${IMAGE_PATH_ENV}],\"Entrypoint\":[\"/pause\"],\"WorkingDir\":\"/\"}" "${r}/pause"

  rm -rf "${r}/debian" && mkdir -p "${r}/debian"
  tar -xf "${DEBIAN_TAR}" -C "${r}/debian"
  build_image nonroot "${e2e}/nonroot:1.5" \
    "{\"User\":\"1234\",\"Env\":[${IMAGE_PATH_ENV}],\"Cmd\":[\"/bin/sh\"]}" "${r}/debian"
  build_image glibc-dns-testing "${e2e}/glibc-dns-testing:2.0.0" \
    "{\"Env\":[${IMAGE_PATH_ENV}],\"Cmd\":[\"bash\"]}" "${r}/debian"

  # agnhost: busybox, then Debian's tools, then agnhost and its files.
  # Where alpine's packages put them. busybox also has nc, ip, ipcs and
  # nslookup applets in /bin; as in upstream's image, the real tools come
  # first in PATH (or replace the applet, for ip). busybox has no getent:
  # the DNS specs' queriers run `getent hosts NAME` for /etc/hosts entries.
  stage_tools "${r}/debian" "${r}/agnhost-tools" /bin/bash:/bin/bash /usr/bin/curl:/usr/bin/curl \
    /bin/nc.openbsd:/usr/bin/nc /bin/ip:/sbin/ip /bin/ss:/usr/sbin/ss /usr/bin/ipcs:/usr/bin/ipcs \
    /usr/bin/dig:/usr/bin/dig /usr/bin/nslookup:/usr/bin/nslookup /usr/bin/getent:/usr/bin/getent
  stage_fake_registry "${IMG_DIR}/pause.oci.tar" "${r}/agnhost-registry"
  local a="${r}/agnhost"
  rm -rf "${a}" && mkdir -p "${a}/uploads" "${a}/etc" "${a}/home/user-defined-in-image"
  install -m 0755 "${AGNHOST_BIN}" "${a}/agnhost"
  ln -s agnhost "${a}/agnhost-2"
  install -m 0644 "${mod}/test/images/agnhost/porter/localhost.crt" "${mod}/test/images/agnhost/porter/localhost.key" "${a}/"
  cp "${r}/busybox/etc/passwd" "${r}/busybox/etc/group" "${a}/etc/"
  printf 'user-defined-in-image:x:1000:1000:Linux User,,,:/home/user-defined-in-image:/bin/sh\n' >>"${a}/etc/passwd"
  printf 'user-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\n' >>"${a}/etc/group"
  chown 1000:1000 "${a}/home/user-defined-in-image"
  # glibc without an nsswitch.conf asks DNS before /etc/hosts, and a "no such
  # name" answer ends the lookup; musl (upstream's libc) reads /etc/hosts first.
  printf '%s: files\n' passwd group shadow networks protocols services >"${a}/etc/nsswitch.conf"
  printf 'hosts: files dns\n' >>"${a}/etc/nsswitch.conf"
  # The ImageVolume spec reads the kitten image's /etc/os-release and looks
  # for "Alpine Linux": this one says which image it stands in for.
  printf '%s\n' 'NAME="kubeletkit busybox rootfs, standing in for Alpine Linux"' 'ID=kubeletkit-busybox' \
    'ID_LIKE=alpine' 'PRETTY_NAME="kubeletkit busybox rootfs, standing in for Alpine Linux"' >"${a}/etc/os-release"
  chmod 0644 "${a}/etc/nsswitch.conf" "${a}/etc/os-release"
  # Both tags hold the same agnhost, but as two images (the label differs), as
  # upstream's are: removing one by ID (image GC, RemoveImage) must not remove
  # the other.
  local tag pic
  for tag in 2.63.0 2.55; do
    build_image "agnhost-${tag}" "${e2e}/agnhost:${tag}" "$(agnhost_config pause "agnhost:${tag}")" \
      "${r}/busybox" "${r}/agnhost-tools" "${r}/agnhost-registry" "${a}"
  done
  # nautilus and kitten: upstream's are agnhost 2.63.0 plus a picture and a
  # data.json that names it, served from / by test-webserver.
  for pic in nautilus kitten; do
    rm -rf "${r:?}/${pic}" && mkdir -p "${r}/${pic}"
    install -m 0644 "${mod}/test/images/${pic}/html/${pic}.jpg" "${mod}/test/images/${pic}/html/data.json" "${r}/${pic}/"
    build_image "${pic}" "${e2e}/${pic}:1.8" "$(agnhost_config test-webserver "${pic}:1.8")" \
      "${r}/busybox" "${r}/agnhost-tools" "${r}/agnhost-registry" "${a}" "${r}/${pic}"
  done

  # nginx stand-ins: hack/webserver as nginx on :80 over the busybox rootfs.
  rm -rf "${r}/nginx" && mkdir -p "${r}/nginx/usr/sbin" "${r}/nginx/www" "${r}/nginx/var/run"
  install -m 0755 "${KK_BUILD}/webserver/webserver" "${r}/nginx/usr/sbin/nginx"
  printf '<!DOCTYPE html>\n<html><head><title>Welcome to nginx!</title></head><body><h1>Welcome to nginx!</h1></body></html>\n' \
    >"${r}/nginx/www/index.html"
  chmod 0755 "${r}/nginx/www" && chmod 0644 "${r}/nginx/www/index.html"
  local nginx_config="{\"Env\":[${IMAGE_PATH_ENV}],\"Entrypoint\":[\"/usr/sbin/nginx\"],\"Cmd\":[\"-listen\",\":80\",\"master process\"],\"ExposedPorts\":{\"80/tcp\":{}},\"StopSignal\":\"SIGQUIT\",\"WorkingDir\":\"/\"}"
  build_image nginx "${e2e}/nginx:1.15-4" "${nginx_config}" "${r}/busybox" "${r}/nginx"
  build_image nginx-new "${e2e}/nginx:1.27-0" "${nginx_config}" "${r}/busybox" "${r}/nginx"

  rm -rf "${r}/nonewprivs" && mkdir -p "${r}/nonewprivs/usr/local/bin"
  install -m 4755 "${KK_BUILD}/nnp/nnp" "${r}/nonewprivs/usr/local/bin/nnp"
  build_image nonewprivs "${e2e}/nonewprivs:1.4" \
    "{\"Env\":[${IMAGE_PATH_ENV}],\"Cmd\":[\"nnp\"],\"WorkingDir\":\"/\"}" "${r}/busybox" "${r}/nonewprivs"

  # sample-apiserver: /sample-apiserver on the busybox rootfs (upstream's base
  # is alpine); the Aggregator spec gives it its flags and certificates.
  rm -rf "${r}/sample-apiserver" && mkdir -p "${r}/sample-apiserver"
  install -m 0755 "${CACHE}/sample-apiserver-${SAMPLE_APISERVER_VERSION}" "${r}/sample-apiserver/sample-apiserver"
  build_image sample-apiserver "${e2e}/sample-apiserver:1.29.2" \
    "{\"Env\":[${IMAGE_PATH_ENV}],\"Entrypoint\":[\"/sample-apiserver\"],\"WorkingDir\":\"/\"}" \
    "${r}/busybox" "${r}/sample-apiserver"

  # etcd: the binary alone, where the spec's command runs it; upstream's image
  # is distroless (no shell either). Its default data dir is ./default.etcd.
  rm -rf "${r}/etcd" && mkdir -p "${r}/etcd/usr/local/bin" "${r}/etcd/tmp"
  chmod 1777 "${r}/etcd/tmp"
  install -m 0755 "${CACHE}/etcd-${ETCD_VERSION}" "${r}/etcd/usr/local/bin/etcd"
  build_image etcd "${REGISTRY}/etcd:${ETCD_VERSION#v}-0" \
    "{\"Env\":[${IMAGE_PATH_ENV}],\"Cmd\":[\"/usr/local/bin/etcd\"],\"ExposedPorts\":{\"2379/tcp\":{},\"2380/tcp\":{}},\"WorkingDir\":\"/\"}" \
    "${r}/etcd"

  # Archives of a name no longer built (e.g. after a port change) go.
  for f in "${IMG_DIR}"/*.oci.tar; do
    [[ -f "${f}.inputs" ]] || continue
    case "$(basename "${f}" .oci.tar)" in
      busybox | pause | nonroot | glibc-dns-testing | agnhost-2.63.0 | agnhost-2.55 | nautilus | kitten | nginx | \
        nginx-new | nonewprivs | sample-apiserver | etcd) ;;
      *) rm -f "${f}" "${f}.inputs" "${f}.ref" ;;
    esac
  done
  kk_log "conformance images built in $((SECONDS - t0))s: ${IMG_DIR}; repo list ${REPO_LIST}"
}

# archives: every archive and its reference, one "PATH REF" per line. Callers
# run need_archives first (a kk_die in a process substitution stops nothing).
archives() {
  local f
  for f in "${IMG_DIR}"/*.oci.tar; do
    [[ -f "${f}.ref" ]] && printf '%s %s\n' "${f}" "$(cat "${f}.ref")"
  done
}
need_archives() {
  [[ -n "$(archives)" ]] || kk_die "no archives in ${IMG_DIR}: run $0 build"
}

import() {
  local pid f ref n=0
  pid="$(kk_our_containerd_pid)"
  [[ -n "${pid}" ]] || kk_die "containerd of ${KK_WORK} is not running: run hack/containerd-start.sh"
  need_archives
  while read -r f ref; do
    kk_ctr images import --base-name "${ref%:*}" "${f}" >/dev/null
    kk_ctr images ls -q | grep -xF "${ref}" >/dev/null || kk_die "import of ${f} did not create ${ref}"
    n=$((n + 1))
  done < <(archives)
  kk_log "imported ${n} images into ${KK_SOCK}"
}

# ---------------------------------------------------------------- registry
is_our_registry() {
  local pid="$1"
  kk_pid_alive "${pid}" || return 1
  [[ "$(kk_cmdline "${pid}")" == "${CRANE_BIN} registry serve --address ${REGISTRY} --disk ${REG_DISK} "* ]]
}

registry_start() {
  local pid tmp f ref deadline
  need_archives
  [[ -x "${CRANE_BIN}" ]] || kk_die "${CRANE_BIN} missing: run $0 build first (outside any network namespace)"
  mkdir -p "${CI_DIR}"
  pid="$(kk_pidfile_pid "${REG_PIDFILE}" is_our_registry)"
  if [[ -n "${pid}" ]]; then
    kk_log "registry already running on ${REGISTRY} (pid ${pid})"
  else
    rm -rf "${REG_DISK}" && mkdir -p "${REG_DISK}"
    printf '\n==== %s conformance-images.sh registry-start ====\n' "$(date -Is)" >>"${REG_LOG}"
    # shellcheck disable=SC2016 # $$ and $1.. are for the inner shell
    setsid bash -c 'echo $$ >"$1"; shift; eval "${KK_CLOSE_FDS}"; exec "$@"' kk-registry "${REG_PIDFILE}" \
      "${CRANE_BIN}" registry serve --address "${REGISTRY}" --disk "${REG_DISK}" \
      </dev/null >>"${REG_LOG}" 2>&1 &
    deadline=$((SECONDS + 10))
    until curl -fsS -o /dev/null "http://${REGISTRY}/v2/" 2>/dev/null; do
      # Dead once the PID the file names is gone: the file is written
      # before the exec, so a live PID may not be crane's yet.
      pid="$(tr -dc '0-9' <"${REG_PIDFILE}" 2>/dev/null || true)"
      if ((SECONDS >= deadline)) || { [[ -n "${pid}" ]] && ! kk_pid_alive "${pid}"; }; then
        tail -n 20 "${REG_LOG}" >&2 || true
        kk_die "registry did not answer on http://${REGISTRY}/v2/; see ${REG_LOG}"
      fi
      sleep 0.1
    done
    kk_log "registry serving on ${REGISTRY} (pid $(cat "${REG_PIDFILE}"))"
  fi
  while read -r f ref; do
    tmp="$(mktemp -d)"
    tar -xf "${f}" -C "${tmp}"
    "${CRANE_BIN}" push --insecure "${tmp}" "${ref}" >/dev/null 2>>"${REG_LOG}" ||
      { rm -rf "${tmp}"; kk_die "crane push ${ref} failed; see ${REG_LOG}"; }
    rm -rf "${tmp}"
  done < <(archives)
  kk_log "registry ${REGISTRY}: pushed $(archives | wc -l) images"
}

registry_stop() {
  local pid
  pid="$(kk_pidfile_pid "${REG_PIDFILE}" is_our_registry)"
  if [[ -n "${pid}" ]]; then
    kk_stop_pid registry "${pid}" 5
  fi
  rm -f "${REG_PIDFILE}"
  rm -rf "${REG_DISK}"
}

[[ "$(id -u)" == 0 ]] || kk_die "must run as root"
case "${1:-}" in
  build) build ;;
  import) import ;;
  registry-start) registry_start ;;
  registry-stop) registry_stop ;;
  env) cat "${CI_ENV}" ;;
  *)
    echo "usage: $0 build | import | registry-start | registry-stop | env" >&2
    exit 2
    ;;
esac

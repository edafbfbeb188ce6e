#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# hack/controlplane-setup.sh: install etcd and build kube-apiserver and
# kubectl for the API-server end-to-end tests. Idempotent and cached:
#   1. etcd: apt-get install etcd-server (Debian 12: etcd 3.4) when `etcd` is
#      missing. Debian's etcd unit is never started or enabled by us; without
#      systemd its postinst cannot start it either (checked after install).
#   2. kube-apiserver: built from the nested module hack/apiserver (go.mod
#      requires k8s.io/kubernetes $KK_K8S_VERSION and replaces each
#      k8s.io/<staging> module with its v0.x release; go.sum is committed) with
#        go build -o $KK_APISERVER_CACHE/kube-apiserver-$KK_K8S_VERSION \
#          k8s.io/kubernetes/cmd/kube-apiserver
#      under nice, GOWORK=off and -mod=readonly (go.mod/go.sum never change).
#      Skipped when that binary exists. About 3.5 minutes on 2 cores with an
#      empty Go build cache, 5s with a warm one (another KK_WORK).
#   3. kubectl: built the same way (k8s.io/kubernetes/cmd/kubectl, the same
#      version) into $KK_APISERVER_CACHE/kubectl-$KK_K8S_VERSION; the
#      control plane's env file names it KK_KUBECTL. 21s here once
#      kube-apiserver's build has warmed the Go build cache.
#   4. kube-controller-manager and kube-scheduler, the same way, for the
#      control plane a node joins (KK_CP_CLUSTER=1, hack/join.sh): 37s and
#      6s with a warm Go build cache.
#
# Environment variables:
#   KK_WORK          work dir (default /tmp/kubeletkit-e2e)
#   KK_K8S_VERSION   kube-apiserver and kubectl version (default v1.36.3;
#                    must be the one hack/apiserver/go.mod requires)
#   KK_APISERVER_CACHE  where the binaries are cached (default $KK_WORK/bin)
#   KK_SKIP_APT=1    never run apt-get (fail if etcd is missing)
#   KK_REBUILD=1     rebuild the binaries even if cached
set -euo pipefail
HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "${HACK_DIR}/lib.sh"

install_etcd() {
  if command -v etcd >/dev/null 2>&1; then
    kk_log "etcd present: $(etcd --version 2>/dev/null | head -1)"
    return 0
  fi
  [[ "${KK_SKIP_APT:-0}" != 1 ]] || kk_die "etcd not found and KK_SKIP_APT=1"
  [[ "$(id -u)" == 0 ]] || kk_die "etcd not found; installing it needs root"
  kk_log "apt-get install etcd-server"
  export DEBIAN_FRONTEND=noninteractive
  # policy-rc.d exit 101 is the Debian way to tell maintainer scripts not to
  # start services; we only set it for this one command if none exists.
  local policy=/usr/sbin/policy-rc.d created=0
  if [[ ! -e "${policy}" ]]; then
    printf '#!/bin/sh\nexit 101\n' >"${policy}"
    chmod 0755 "${policy}"
    created=1
  fi
  local rc=0
  apt-get install -y --no-install-recommends etcd-server >&2 ||
    { apt-get update >&2 && apt-get install -y --no-install-recommends etcd-server >&2; } || rc=$?
  ((created == 0)) || rm -f "${policy}"
  ((rc == 0)) || kk_die "apt-get install etcd-server failed"
  command -v etcd >/dev/null 2>&1 || kk_die "etcd-server installed but no etcd binary on PATH"
  # The package's service must not be running: we start our own etcd.
  local p
  for p in $(pgrep -x etcd || true); do
    if ! kk_is_our_etcd "${p}"; then
      kk_log "warning: an etcd not started by us is running (pid ${p}): $(kk_cmdline "${p}")"
    fi
  done
  kk_log "etcd installed: $(etcd --version 2>/dev/null | head -1)"
}

build_apiserver() {
  kk_build_upstream kube-apiserver "${KK_APISERVER_BIN}"
}

build_kubectl() {
  kk_build_upstream kubectl "${KK_KUBECTL_BIN}"
}

build_controllers() {
  kk_build_upstream kube-controller-manager "${KK_CONTROLLER_MANAGER_BIN}"
  kk_build_upstream kube-scheduler "${KK_SCHEDULER_BIN}"
}

main() {
  command -v openssl >/dev/null 2>&1 || kk_die "openssl not found"
  command -v curl >/dev/null 2>&1 || kk_die "curl not found"
  install_etcd
  build_apiserver
  build_kubectl
  build_controllers
}

main "$@"

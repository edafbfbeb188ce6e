#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# hack/envtest-assets.sh: print a directory that controller-runtime's envtest
# can use as KUBEBUILDER_ASSETS: symbolic links named kube-apiserver, etcd and
# (when it is built) kubectl to the binaries the control-plane scripts use:
#   kube-apiserver  $KK_APISERVER_CACHE/kube-apiserver-$KK_K8S_VERSION
#   etcd            the etcd on PATH (Debian's etcd-server)
#   kubectl         $KK_APISERVER_CACHE/kubectl-$KK_K8S_VERSION, if present
# The directory is $KK_WORK/envtest-assets; the links are rewritten on every
# run. The script builds and installs nothing: when a binary is missing it
# fails, naming hack/controlplane-setup.sh, which builds kube-apiserver and
# kubectl and installs etcd. Only the directory goes to stdout:
#
#   KUBEBUILDER_ASSETS=$(bash hack/envtest-assets.sh) go test -tags envtest -race -count=1 -run Envtest ./examples/...
#
# Environment variables:
#   KK_WORK             work dir (default /tmp/kubeletkit-e2e)
#   KK_K8S_VERSION      kube-apiserver and kubectl version (default v1.36.3)
#   KK_APISERVER_CACHE  where controlplane-setup.sh cached the binaries
#                       (default $HOME/.cache/kubeletkit, as in .ci/run)
set -euo pipefail
HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# The persistent cache .ci/run uses, rather than lib.sh's $KK_WORK/bin.
KK_APISERVER_CACHE="${KK_APISERVER_CACHE:-${HOME}/.cache/kubeletkit}"
# shellcheck source=lib.sh
source "${HACK_DIR}/lib.sh"

[[ -x "${KK_APISERVER_BIN}" ]] ||
  kk_die "no ${KK_APISERVER_BIN}: run KK_APISERVER_CACHE=${KK_APISERVER_CACHE} bash hack/controlplane-setup.sh"
etcd_bin="$(command -v etcd)" ||
  kk_die "no etcd on PATH: run bash hack/controlplane-setup.sh (it installs Debian's etcd-server)"

dir="${KK_WORK}/envtest-assets"
mkdir -p "${dir}"
ln -sfn "${KK_APISERVER_BIN}" "${dir}/kube-apiserver"
ln -sfn "${etcd_bin}" "${dir}/etcd"
if [[ -x "${KK_KUBECTL_BIN}" ]]; then
  ln -sfn "${KK_KUBECTL_BIN}" "${dir}/kubectl"
else
  rm -f "${dir}/kubectl"
fi
printf '%s\n' "${dir}"

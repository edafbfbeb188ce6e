#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# hack/containerd-smoke.sh: quick end-to-end check of a running CRI runtime
# with crictl (by default the containerd of hack/containerd-start.sh). It
# checks version and info (RuntimeReady and NetworkReady), then for a
# host-network pod and a pod on the CNI bridge: runs the sandbox, creates and
# starts a busybox container running `sh -c 'echo hi; sleep 3600'`, execs
# `echo ok` in it (ExecSync and streaming exec), reads its log, and stops and
# removes container and pod. Exits non-zero on the first failure.
#
# Usage: containerd-smoke.sh [ENDPOINT]
# Environment variables:
#   KK_WORK           work dir (default /tmp/kubeletkit-e2e); crictl is $KK_WORK/bin/crictl
#   KK_CRI_ENDPOINT   endpoint when none is given (default: our containerd socket)
#   KK_BUSYBOX_IMAGE  busybox image (default docker.io/local/busybox:1)
set -euo pipefail
HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "${HACK_DIR}/lib.sh"

endpoint="${1:-${KK_CRI_ENDPOINT:-${KK_ENDPOINT}}}"
kk_crictl_cmd "${endpoint}"
crictl=("${KK_CRICTL_CMD[@]}" --timeout 30s)
dir="$(mktemp -d "${KK_WORK}/smoke.XXXXXX")"
pod="" ctr=""

cleanup() {
  [[ -z "${ctr}" ]] || "${crictl[@]}" rm -f "${ctr}" >/dev/null 2>&1 || true
  if [[ -n "${pod}" ]]; then
    "${crictl[@]}" stopp "${pod}" >/dev/null 2>&1 || true
    "${crictl[@]}" rmp -f "${pod}" >/dev/null 2>&1 || true
  fi
  rm -rf "${dir}"
}
trap cleanup EXIT

step() { kk_log "smoke: $*"; }
fail() { kk_die "smoke: $*"; }

step "crictl version"
"${crictl[@]}" version
step "crictl info: RuntimeReady and NetworkReady"
info="$("${crictl[@]}" info)"
for cond in RuntimeReady NetworkReady; do
  # The status block lists one {"message","reason","status","type"} object
  # per condition; pick ours and require "status":true in it.
  tr -d ' \n' <<<"${info}" | grep -o "{[^{}]*\"type\":\"${cond}\"[^{}]*}" |
    grep -q '"status":true' || fail "${cond} is not true: $(tail -n 20 <<<"${info}")"
done

# run_pod NAME NETWORK_MODE: NETWORK_MODE 2 = NODE (host network), 0 = POD (CNI).
run_pod() {
  local name="$1" netmode="$2" out logs ip
  mkdir -p "${dir}/${name}/logs"
  cat >"${dir}/${name}/pod.json" <<EOF
{
  "metadata": {"name": "${name}", "namespace": "kk-smoke", "uid": "${name}-$$", "attempt": 0},
  "log_directory": "${dir}/${name}/logs",
  "linux": {"security_context": {"namespace_options": {"network": ${netmode}}}}
}
EOF
  cat >"${dir}/${name}/ctr.json" <<EOF
{
  "metadata": {"name": "busybox"},
  "image": {"image": "${KK_BUSYBOX_IMAGE}"},
  "command": ["sh", "-c", "echo hi; sleep 3600"],
  "log_path": "busybox.log"
}
EOF
  step "${name}: runp"
  pod="$("${crictl[@]}" runp "${dir}/${name}/pod.json")"
  if [[ "${netmode}" == 0 ]]; then
    ip="$("${crictl[@]}" inspectp -o go-template --template '{{.status.network.ip}}' "${pod}")"
    [[ -n "${ip}" && "${ip}" != "<no value>" ]] || fail "${name}: pod on the CNI network got no IP"
    step "${name}: pod IP ${ip}"
  fi
  step "${name}: create + start busybox container"
  ctr="$("${crictl[@]}" create "${pod}" "${dir}/${name}/ctr.json" "${dir}/${name}/pod.json")"
  "${crictl[@]}" start "${ctr}" >/dev/null
  step "${name}: exec (sync) echo ok"
  out="$("${crictl[@]}" exec -s "${ctr}" echo ok)"
  [[ "${out}" == ok ]] || fail "${name}: ExecSync printed '${out}'"
  step "${name}: exec (streaming) echo ok"
  out="$("${crictl[@]}" exec "${ctr}" echo ok)"
  [[ "${out}" == ok ]] || fail "${name}: streaming exec printed '${out}'"
  step "${name}: logs"
  local deadline=$((SECONDS + 10))
  until logs="$("${crictl[@]}" logs "${ctr}" 2>&1)" && [[ "${logs}" == *hi* ]]; do
    ((SECONDS < deadline)) || fail "${name}: log has no 'hi': ${logs}"
    sleep 0.2
  done
  step "${name}: stop + rm container, stopp + rmp pod"
  "${crictl[@]}" stop --timeout 2 "${ctr}" >/dev/null
  "${crictl[@]}" rm "${ctr}" >/dev/null
  ctr=""
  "${crictl[@]}" stopp "${pod}" >/dev/null
  "${crictl[@]}" rmp "${pod}" >/dev/null
  pod=""
}

t0=${SECONDS}
run_pod kk-smoke-hostnet 2
run_pod kk-smoke-cni 0
kk_log "smoke: OK in $((SECONDS - t0))s"

#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# hack/chaos.sh: the reliability suite of issue 35. It builds minikubelet
# (and examples/fakecri) once and runs minikubelet as a process through each
# finding of the trial, one result line a case (PASS, FAIL or SKIP, the
# case's id, what was checked, what was seen); it exits non-zero when a case
# fails. docs/reliability.md lists the cases and their results.
#
#   bash hack/controlplane-setup.sh     # kube-apiserver and kubectl, cached
#   bash hack/chaos.sh
#
#   a  damaged --local-state files: the 28 kinds of localstate's
#      TestOpenBoltDamaged (written by it into KK_DAMAGED_DIR), a symbolic
#      link to another file, and 3 copies of a valid file with random bytes
#      at random places (a fuzzer's kind of damage; FuzzOpenBolt itself runs
#      in .ci/run's fuzz step). minikubelet, joined to the control plane,
#      must start, answer /healthz, run its static pod, and move a damaged
#      file aside (or keep it, where TestOpenBoltDamaged says the file reads
#      as of its last write or the one before); a symbolic link is refused
#      with a clean error and the file it points to left as it was. Never a
#      crash (panic, fatal error, signal).
#   b  the API server down at start (a kubeconfig naming a closed local
#      port, no local state): the static pod Running within 5s.
#   c  a completed restartPolicy Never pod (the API server's) is not run
#      again after SIGKILL and a restart on the embedded fake runtime,
#      which lost it: with the API server answering, then away (a
#      kubeconfig naming a closed port, the local state kept).
#   d  SIGKILL loops on examples/fakecri over a socket: minikubelet killed
#      5 times once its static pod runs; the runtime must have made one
#      sandbox and one container, adopted after each restart.
#   e  bad manifests (unknown fields, an unknown volume type, a second YAML
#      document, YAML that does not parse, an invalid name, a 64 KiB image
#      name): no crash, the good static pod Running, warnings that name the
#      unknown fields and the second document, no log line over 2 KiB.
#   f  the kubelet API refuses bad credentials: none, a bearer token it
#      cannot check, a client certificate of another CA (and lets the one
#      of its client CA in, so that the refusals mean something).
#   g  two agents' cgroup managers side by side on the machine's cgroups,
#      each under a root of its own (cgroups' root-tagged
#      TestRootTwoManagers: neither touches the other's pod cgroups);
#      skipped without root.
#   h  safer defaults: standalone, no read-only server unless asked for
#      (/configz shows readOnlyPort 0), and --anonymous-auth with
#      AlwaysAllow warns that anyone can exec into the containers.
#
# It is isolated: everything lives in a work dir of its own (KK_CHAOS_WORK,
# default a fresh temp dir; removed after a run that passed unless
# KK_CHAOS_KEEP=1), with its own control plane (hack/controlplane-start.sh
# under that dir, node kk-chaos) and free ports; it writes nothing outside
# that dir and stops only the processes it started, by PID. About 2 minutes.
#
# Environment variables:
#   KK_CHAOS_WORK       work dir (default: a new /tmp/kk-chaos.XXXXXX)
#   KK_CHAOS_KEEP=1     keep the work dir after a run that passed
#   KK_CHAOS_CASES      the cases to run (default "a b c d e f g h")
#   KK_APISERVER_CACHE  where hack/controlplane-setup.sh keeps kube-apiserver
#                       (default $HOME/.cache/kubeletkit, as .ci/run's)
set -euo pipefail
HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "${HACK_DIR}/.." && pwd)"
export KK_APISERVER_CACHE="${KK_APISERVER_CACHE:-${HOME}/.cache/kubeletkit}"
WORK="${KK_CHAOS_WORK:-$(mktemp -d /tmp/kk-chaos.XXXXXX)}"
export KK_WORK="${WORK}"
export KK_NODE_NAME=kk-chaos
# shellcheck source=lib.sh
source "${HACK_DIR}/lib.sh"

CASES="${KK_CHAOS_CASES:-a b c d e f g h}"
NODE=kk-chaos
BIN="${WORK}/bin"
MK="${BIN}/minikubelet"
FAKECRI="${BIN}/fakecri"
STATIC="web-${NODE}"
MK_PID=""
FAKECRI_PID=""
CP_STARTED=0
FAILED=0
PASSED=0
SKIPPED=0

# result STATUS ID TEXT: the one line a case prints.
result() {
  printf '%-4s %-5s %s\n' "$1" "$2" "$3"
  case "$1" in
    PASS) PASSED=$((PASSED + 1)) ;;
    SKIP) SKIPPED=$((SKIPPED + 1)) ;;
    *) FAILED=$((FAILED + 1)) ;;
  esac
}

stop_mk() {
  if [[ -n "${MK_PID}" ]] && kk_runs "${MK_PID}" "${MK}"; then
    kk_stop_pid minikubelet "${MK_PID}" 10 >/dev/null 2>&1 || true
  fi
  [[ -z "${MK_PID}" ]] || wait "${MK_PID}" 2>/dev/null || true
  MK_PID=""
}

# kill_mk: SIGKILL the running minikubelet, as a crash or an OOM kill would.
kill_mk() {
  if [[ -n "${MK_PID}" ]] && kk_runs "${MK_PID}" "${MK}"; then
    kill -KILL "${MK_PID}" 2>/dev/null || true
  fi
  [[ -z "${MK_PID}" ]] || wait "${MK_PID}" 2>/dev/null || true
  MK_PID=""
}

cleanup() {
  local status=$?
  stop_mk
  stop_fakecri
  if [[ "${CP_STARTED}" == 1 ]]; then
    bash "${HACK_DIR}/controlplane-stop.sh" >"${WORK}/controlplane-stop.log" 2>&1 || status=1
  fi
  if [[ "${status}" == 0 && "${KK_CHAOS_KEEP:-0}" != 1 && -z "${KK_CHAOS_WORK:-}" ]]; then
    rm -rf "${WORK}"
  else
    kk_log "work dir kept: ${WORK}"
  fi
  exit "${status}"
}
trap cleanup EXIT

# start_mk DIR PORT ARGS...: start minikubelet with its root dir, logs and
# read-only port (/pods, /healthz) under DIR and on PORT.
start_mk() {
  local dir="$1" port="$2"
  shift 2
  mkdir -p "${dir}"
  "${MK}" --node-name "${NODE}" --root-dir "${dir}/root" --eviction-hard "${KK_EVICTION_HARD}" --address 127.0.0.1 --port 0 --healthz-port 0 \
    --read-only-port "${port}" "$@" >>"${dir}/stdout.log" 2>>"${dir}/stderr.log" &
  MK_PID=$!
}

# base PORT|URL: the read-only server on PORT, or URL (the kubelet API,
# whose self-signed certificate is not checked).
base() { if [[ "$1" == *://* ]]; then printf '%s' "$1"; else printf 'http://127.0.0.1:%s' "$1"; fi; }

# pods PORT|URL: the pods minikubelet serves.
pods() { curl --noproxy '*' -skf --max-time 2 "$(base "$1")/pods" 2>/dev/null || true; }

# phase PORT POD: the phase of POD as minikubelet reports it.
phase() { pods "$1" | jq -r --arg n "$2" '.items[]? | select(.metadata.name == $n) | .status.phase' 2>/dev/null || true; }

# wait_running PORT|URL POD SECONDS: wait until minikubelet answers /healthz and
# reports POD Running, while it lives; it prints the seconds it took.
wait_running() {
  local port="$1" pod="$2" limit="$3" start=${EPOCHREALTIME}
  local deadline=$((SECONDS + limit))
  while ((SECONDS <= deadline)); do
    kk_pid_alive "${MK_PID}" || return 1
    if [[ "$(curl --noproxy '*' -skf --max-time 1 "$(base "${port}")/healthz" 2>/dev/null)" == ok &&
      "$(phase "${port}" "${pod}")" == Running ]]; then
      awk -v a="${start}" -v b="${EPOCHREALTIME}" 'BEGIN { printf "%.1f\n", b - a }'
      return 0
    fi
    sleep 0.1
  done
  return 1
}

# start_fakecri SOCKET LOG [ARGS...]: start examples/fakecri on SOCKET (a new,
# empty runtime) and wait for its socket.
start_fakecri() {
  local sock="$1" log="$2"
  shift 2
  rm -f "${sock}"
  "${FAKECRI}" --listen "unix://${sock}" --streaming-listen "" "$@" >"${log}" 2>&1 &
  FAKECRI_PID=$!
  for _ in $(seq 100); do
    [[ -S "${sock}" ]] && return 0
    sleep 0.1
  done
  kk_die "fakecri did not listen on ${sock}; see ${log}"
}

stop_fakecri() {
  if [[ -n "${FAKECRI_PID}" ]] && kk_runs "${FAKECRI_PID}" "${FAKECRI}"; then
    kk_stop_pid fakecri "${FAKECRI_PID}" 10 >/dev/null 2>&1 || true
  fi
  [[ -z "${FAKECRI_PID}" ]] || wait "${FAKECRI_PID}" 2>/dev/null || true
  FAKECRI_PID=""
}

# crashed LOG: true when a log shows a Go crash.
# (A fault bbolt makes and localstate recovers is logged inside a line.)
crashed() { grep -qE '^(panic: |fatal error: |\[signal |goroutine [0-9]+ \[)' "$1"; }

# closed_port: a local port nothing listens on.
closed_port() { kk_free_port; }

# kubeconfig_at FILE SERVER: a copy of the node kubeconfig naming SERVER.
kubeconfig_at() {
  sed -E "s#server: .*#server: $2#" "${KK_NODE_KUBECONFIG}" >"$1"
}

# api VERB PATH [DATA]: the control plane's API as its admin.
api() {
  local args=(--noproxy '*' -sS --max-time 10 --cacert "${KK_APISERVER_CA}" -H "Authorization: Bearer ${KK_APISERVER_TOKEN}" -X "$1")
  if [[ $# -ge 3 ]]; then args+=(-H 'Content-Type: application/json' -d "$3"); fi
  curl "${args[@]}" "${KK_APISERVER_URL}$2"
}

write_static_manifest() {
  mkdir -p "$1"
  cat >"$1/web.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: app
    image: docker.io/library/busybox:1.36
    command: ["sleep", "3600"]
EOF
}

needs_controlplane() {
  [[ " ${CASES} " == *" a "* || " ${CASES} " == *" c "* ]]
}

# ---------------------------------------------------------------------------
kk_log "work dir ${WORK}; building minikubelet and fakecri"
mkdir -p "${BIN}"
(cd "${ROOT}" && go build -o "${MK}" ./examples/minikubelet && go build -o "${FAKECRI}" ./examples/fakecri)
MANIFESTS="${WORK}/manifests"
write_static_manifest "${MANIFESTS}"

if needs_controlplane; then
  kk_log "starting a control plane of its own (node ${NODE})"
  bash "${HACK_DIR}/controlplane-setup.sh" >"${WORK}/controlplane-setup.log" 2>&1 ||
    { cat "${WORK}/controlplane-setup.log"; kk_die "hack/controlplane-setup.sh failed"; }
  CP_STARTED=1
  bash "${HACK_DIR}/controlplane-start.sh" >"${WORK}/controlplane-start.log" 2>&1 ||
    { cat "${WORK}/controlplane-start.log"; kk_die "hack/controlplane-start.sh failed"; }
  # shellcheck disable=SC1091
  source "${WORK}/controlplane/env"
fi

# --- a: damaged local-state files -------------------------------------------
case_a_one() { # ID WANT NAME FILE|-: FILE is copied to the path; WANT is TestOpenBoltDamaged's outcome, or "refused"
  local id="$1" want="$2" name="$3" src="$4" dir="${WORK}/a/$1" port took
  mkdir -p "${dir}/root"
  local state="${dir}/root/localstate.db"
  if [[ "${want}" == refused ]]; then
    cp "${src}" "${dir}/target.db"
    ln -s "${dir}/target.db" "${state}"
  elif [[ -d "${src}" ]]; then
    mkdir "${state}"
  else
    cp "${src}" "${state}"
  fi
  local before=""
  [[ "${want}" != refused ]] || before="$(sha256sum <"${dir}/target.db")"
  port="$(kk_free_port)"
  start_mk "${dir}" "${port}" --kubeconfig "${KK_NODE_KUBECONFIG}" --local-state "${state}" --pod-manifest-path "${MANIFESTS}"
  if [[ "${want}" == refused ]]; then
    local rc=0 deadline=$((SECONDS + 10))
    while kk_pid_alive "${MK_PID}" && ((SECONDS < deadline)); do sleep 0.1; done
    kk_pid_alive "${MK_PID}" && kill -KILL "${MK_PID}"
    wait "${MK_PID}" || rc=$?
    MK_PID=""
    if [[ "${rc}" == 1 ]] && grep -q 'symbolic link' "${dir}/stderr.log" && ! crashed "${dir}/stderr.log" &&
      [[ "$(sha256sum <"${dir}/target.db")" == "${before}" ]]; then
      result PASS "a${id}" "${name}: refused with a clean error (exit 1, \"symbolic link\"), the file it points to unchanged"
    else
      result FAIL "a${id}" "${name}: exit ${rc}; see ${dir}/stderr.log"
    fi
    return
  fi
  if ! took="$(wait_running "${port}" "${STATIC}" 20)"; then
    result FAIL "a${id}" "${name}: no /healthz or static pod Running within 20s (alive: $(kk_pid_alive "${MK_PID}" && echo yes || echo no)); see ${dir}/stderr.log"
    stop_mk
    return
  fi
  local aside=no
  compgen -G "${state}.corrupt-*" >/dev/null && aside=yes
  stop_mk
  local expect_aside=no
  [[ "${want}" == "moved aside, empty" ]] && expect_aside=yes
  if crashed "${dir}/stderr.log"; then
    result FAIL "a${id}" "${name}: crashed; see ${dir}/stderr.log"
  elif [[ "${aside}" != "${expect_aside}" && "${want}" != fuzzed ]]; then
    result FAIL "a${id}" "${name}: moved aside: ${aside}, want ${expect_aside} (${want})"
  else
    local what="kept (${want})"
    [[ "${aside}" == yes ]] && what="moved aside"
    result PASS "a${id}" "${name}: started, /healthz ok, static pod Running in ${took}s, ${what}, no crash"
  fi
}

case_a() {
  local dmg="${WORK}/damaged"
  mkdir -p "${dmg}"
  (cd "${ROOT}" && KK_DAMAGED_DIR="${dmg}" go test -count=1 -run '^TestOpenBoltDamaged$' ./localstate/ >"${WORK}/damaged.log" 2>&1) ||
    { cat "${WORK}/damaged.log"; result FAIL a "TestOpenBoltDamaged failed: no damaged files"; return; }
  local id want name
  while IFS=$'\t' read -r id want name; do
    case_a_one "${id}" "${want}" "${name}" "${dmg}/${id}.db"
  done <"${dmg}/cases.tsv"
  # The valid file the damage was done to.
  local valid="${dmg}/valid.db"
  case_a_one 29 refused "a symbolic link to another (valid) file" "${valid}"
  # A fuzzer's kind of damage: random bytes at random places of a valid file.
  local n size i off
  size="$(stat -c %s "${valid}")"
  RANDOM=35
  for n in 30 31 32; do
    cp "${valid}" "${dmg}/${n}.db"
    for ((i = 0; i < 16 * (n - 29); i++)); do
      off=$(((RANDOM * 32768 + RANDOM) % size))
      printf "\\x$(printf %02x $((RANDOM % 256)))" | dd of="${dmg}/${n}.db" bs=1 seek="${off}" conv=notrunc status=none
    done
    case_a_one "${n}" fuzzed "$((16 * (n - 29))) random bytes at random offsets of a valid file" "${dmg}/${n}.db"
  done
}

# --- b: the API server down at start ------------------------------------------
case_b() {
  local dir="${WORK}/b" port took
  mkdir -p "${dir}"
  # A kubeconfig of its own: case b needs no control plane.
  cat >"${dir}/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: down
  cluster: {server: "https://127.0.0.1:$(closed_port)", insecure-skip-tls-verify: true}
users:
- name: node
  user: {token: not-checked}
contexts:
- name: down
  context: {cluster: down, user: node}
current-context: down
EOF
  port="$(kk_free_port)"
  start_mk "${dir}" "${port}" --kubeconfig "${dir}/kubeconfig" --local-state "" --pod-manifest-path "${MANIFESTS}"
  if took="$(wait_running "${port}" "${STATIC}" 5)"; then
    result PASS b "API server down at start: static pod Running in ${took}s (limit 5s)"
  elif kk_pid_alive "${MK_PID}"; then
    result FAIL b "API server down at start: static pod not Running within 5s; see ${dir}/stderr.log"
  else
    result FAIL b "API server down at start: minikubelet exited ($(tail -1 "${dir}/stderr.log" | cut -c1-160))"
  fi
  stop_mk
}

# --- c: a completed Never pod is not run again --------------------------------
# create_never_pod NAME COMMAND OUT: create the API pod NAME on the node,
# restartPolicy Never, its container "job" running COMMAND; the answer in OUT.
create_never_pod() {
  api DELETE "/api/v1/namespaces/default/pods/$1" >/dev/null 2>&1 || true
  api POST /api/v1/namespaces/default/pods "$(jq -cn --arg name "$1" --arg node "${NODE}" --arg cmd "$2" '{apiVersion: "v1", kind: "Pod",
    metadata: {name: $name}, spec: {nodeName: $node, restartPolicy: "Never", automountServiceAccountToken: false,
    containers: [{name: "job", image: "docker.io/library/busybox:1.36", command: [$cmd]}]}}')" >"$3"
}

container_of() { # PORT POD: the pod's first container's ID and state, as minikubelet reports them
  pods "$1" | jq -r --arg n "$2" '.items[]? | select(.metadata.name == $n) |
    .status.phase + " " + (.status.containerStatuses[0].containerID // "-") + " " +
    (.status.containerStatuses[0].state.terminated.reason // "-")' 2>/dev/null || true
}

case_c() {
  local dir="${WORK}/c" port state first seen api_seen deadline
  mkdir -p "${dir}"
  state="${dir}/root/localstate.db"
  port="$(kk_free_port)"
  start_mk "${dir}" "${port}" --kubeconfig "${KK_NODE_KUBECONFIG}" --local-state "${state}" --pod-manifest-path "${MANIFESTS}"
  if ! wait_running "${port}" "${STATIC}" 20 >/dev/null; then
    result FAIL c "minikubelet did not start; see ${dir}/stderr.log"
    stop_mk
    return
  fi
  create_never_pod once true "${dir}/create.json"
  deadline=$((SECONDS + 20))
  api_seen=""
  while ((SECONDS <= deadline)); do
    api_seen="$(api GET /api/v1/namespaces/default/pods/once | jq -r '.status.phase + " " + (.status.containerStatuses[0].containerID // "-")')"
    [[ "${api_seen}" == Succeeded* ]] && break
    sleep 0.2
  done
  first="$(container_of "${port}" once)"
  if [[ "${api_seen}" != Succeeded* || "${first}" != "Succeeded "*" Completed" ]]; then
    result FAIL c "the pod did not complete: API server ${api_seen:-?}, node ${first:-?}"
    stop_mk
    return
  fi
  local round kubeconfig
  for round in "API server answering" "API server away"; do
    kill_mk
    kubeconfig="${KK_NODE_KUBECONFIG}"
    if [[ "${round}" == "API server away" ]]; then
      kubeconfig="${dir}/kubeconfig-away"
      kubeconfig_at "${kubeconfig}" "https://127.0.0.1:$(closed_port)"
    fi
    start_mk "${dir}" "${port}" --kubeconfig "${kubeconfig}" --local-state "${state}" --pod-manifest-path "${MANIFESTS}"
    if ! wait_running "${port}" "${STATIC}" 20 >/dev/null; then
      result FAIL c "after SIGKILL, ${round}: minikubelet did not start; see ${dir}/stderr.log"
      stop_mk
      return
    fi
    # The node has synced its pods (the static pod runs); a pod it would
    # run again is started within the same second on the fake runtime.
    # Three seconds to be sure, watched every 0.2s.
    deadline=$((SECONDS + 3))
    while ((SECONDS <= deadline)); do
      seen="$(container_of "${port}" once)"
      [[ "${seen}" == "${first}" ]] || break
      sleep 0.2
    done
    if [[ "${seen}" != "${first}" ]]; then
      result FAIL c "after SIGKILL, ${round}: the completed pod shows \"${seen}\", was \"${first}\" (run again, or its end rewritten)"
      stop_mk
      return
    fi
    result PASS c "after SIGKILL, ${round}: the completed Never pod is not run again (${seen})"
  done
  stop_mk
  api DELETE /api/v1/namespaces/default/pods/once >/dev/null 2>&1 || true
  case_c_unacknowledged
}

# apiserver_back: start the kube-apiserver that --stop-apiserver stopped.
apiserver_back() { bash "${HACK_DIR}/controlplane-start.sh" --start-apiserver >>"$1" 2>&1; }

# The pod finishes while the API server is away, so that its terminal status
# is known to the node alone (its local state); the node is SIGKILLed and
# restarts on a new, empty examples/fakecri, the API server still away, and
# then the API server comes back.
case_c_unacknowledged() {
  local dir="${WORK}/c-away" port state api_seen seen deadline made
  mkdir -p "${dir}"
  state="${dir}/root/localstate.db"
  printf '%s\n' 'images: [docker.io/library/busybox:1.36]' 'containers:' \
    '  - {command: [work], outcome: exit, exitCode: 0, runFor: 6s}' >"${dir}/fakecri.yaml"
  start_fakecri "${dir}/fakecri.sock" "${dir}/fakecri-1.log" --config "${dir}/fakecri.yaml"
  port="$(kk_free_port)"
  local mkargs=(--container-runtime-endpoint "unix://${dir}/fakecri.sock" --kubeconfig "${KK_NODE_KUBECONFIG}"
    --local-state "${state}" --pod-manifest-path "${MANIFESTS}")
  start_mk "${dir}" "${port}" "${mkargs[@]}"
  if ! wait_running "${port}" "${STATIC}" 20 >/dev/null; then
    result FAIL c "API server away when the pod finished: minikubelet did not start; see ${dir}/stderr.log"
    stop_mk
    stop_fakecri
    return
  fi
  create_never_pod late work "${dir}/create.json"
  deadline=$((SECONDS + 20))
  while ((SECONDS <= deadline)); do
    api_seen="$(api GET /api/v1/namespaces/default/pods/late | jq -r '.status.phase')"
    [[ "${api_seen}" == Running ]] && break
    sleep 0.2
  done
  bash "${HACK_DIR}/controlplane-start.sh" --stop-apiserver >>"${dir}/controlplane.log" 2>&1
  deadline=$((SECONDS + 20))
  while ((SECONDS <= deadline)); do
    seen="$(container_of "${port}" late)"
    [[ "${seen}" == Succeeded* ]] && break
    sleep 0.2
  done
  if [[ "${api_seen}" != Running || "${seen}" != "Succeeded "*" Completed" ]]; then
    apiserver_back "${dir}/controlplane.log"
    result FAIL c "API server away when the pod finished: it did not run and finish (API server ${api_seen:-?}, node ${seen:-?})"
    stop_mk
    stop_fakecri
    return
  fi
  # The status manager tries to push the terminal status (its sink retries
  # a GET and a patch for about 3s each) before the node is killed.
  sleep 8
  kill_mk
  stop_fakecri
  start_fakecri "${dir}/fakecri.sock" "${dir}/fakecri-2.log" --config "${dir}/fakecri.yaml"
  start_mk "${dir}" "${port}" "${mkargs[@]}"
  if ! wait_running "${port}" "${STATIC}" 20 >/dev/null; then
    apiserver_back "${dir}/controlplane.log"
    result FAIL c "API server away when the pod finished: minikubelet did not restart; see ${dir}/stderr.log"
    stop_mk
    stop_fakecri
    return
  fi
  sleep 3
  made="$(grep -c 'msg="container created".* name=job ' "${dir}/fakecri-2.log" || true)"
  seen="$(container_of "${port}" late)"
  if [[ "${made}" != 0 || "${seen}" != "Succeeded "*" Completed" ]]; then
    result FAIL c "API server away when the pod finished, and at the restart: ${made} containers made for it, the node shows \"${seen}\""
  else
    result PASS c "API server away when the pod finished, and at the restart on a new runtime: not run again (${seen%% *} from the local state)"
  fi
  apiserver_back "${dir}/controlplane.log"
  deadline=$((SECONDS + 45))
  while ((SECONDS <= deadline)); do
    api_seen="$(api GET /api/v1/namespaces/default/pods/late | jq -r '.status.phase + " " + (.status.containerStatuses[0].state.terminated.reason // "-")')"
    [[ "${api_seen}" == "Succeeded Completed" ]] && break
    sleep 0.5
  done
  made="$(grep -c 'msg="container created".* name=job ' "${dir}/fakecri-2.log" || true)"
  if [[ "${made}" != 0 || "${api_seen}" != "Succeeded Completed" ]]; then
    result FAIL c "API server back: ${made} containers made for the pod, the API server shows \"${api_seen}\", want Succeeded Completed"
  else
    result PASS c "API server back: the API server shows the pod Succeeded (Completed), the node's own end of it; not run again"
  fi
  stop_mk
  stop_fakecri
  api DELETE /api/v1/namespaces/default/pods/late >/dev/null 2>&1 || true
}

# --- d: SIGKILL loops on the fake runtime over a socket ------------------------
case_d() {
  local dir="${WORK}/d" port i sandboxes containers
  mkdir -p "${dir}"
  start_fakecri "${dir}/fakecri.sock" "${dir}/fakecri.log"
  port="$(kk_free_port)"
  for i in 1 2 3 4 5 6; do
    start_mk "${dir}" "${port}" --container-runtime-endpoint "unix://${dir}/fakecri.sock" --pod-manifest-path "${MANIFESTS}"
    if ! wait_running "${port}" "${STATIC}" 20 >/dev/null; then
      result FAIL d "start ${i}: the static pod not Running; see ${dir}/stderr.log"
      stop_mk
      return
    fi
    if ((i < 6)); then kill_mk; fi
  done
  stop_mk
  sandboxes="$(grep -c 'msg="sandbox ready".*pod=default/'"${STATIC}" "${dir}/fakecri.log" || true)"
  containers="$(grep -c 'msg="container created"' "${dir}/fakecri.log" || true)"
  if crashed "${dir}/stderr.log"; then
    result FAIL d "minikubelet crashed; see ${dir}/stderr.log"
  elif ! grep -q "The runtime is kubeletkit's fake, whose containers are no processes: the pods get no cgroups" "${dir}/stderr.log"; then
    result FAIL d "on examples/fakecri over a socket, no line says the pods get no cgroups (--cgroups-per-qos is off there by default)"
  elif [[ "${sandboxes}" == 1 && "${containers}" == 1 ]]; then
    result PASS d "5 SIGKILLs and 6 starts on examples/fakecri: 1 sandbox and 1 container made, adopted after each restart; no cgroups made (a fake runtime's default, said in the log)"
  else
    result FAIL d "5 SIGKILLs and 6 starts: ${sandboxes} sandboxes and ${containers} containers made, want 1 and 1"
  fi
  stop_fakecri
}

# --- e: bad manifests ---------------------------------------------------------
case_e() {
  local dir="${WORK}/e" m port took longest
  m="${dir}/manifests"
  write_static_manifest "${m}"
  cat >"${m}/typo.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: typo
spec:
  restartPolicyy: Never
  containers:
  - name: app
    image: docker.io/library/busybox:1.36
    volumeMountz: []
---
apiVersion: v1
kind: Pod
metadata:
  name: second
spec:
  containers:
  - name: app
    image: docker.io/library/busybox:1.36
EOF
  cat >"${m}/volume.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: volume
spec:
  volumes:
  - name: v
    glusterfsz: {path: x}
  containers:
  - name: app
    image: docker.io/library/busybox:1.36
EOF
  printf 'apiVersion: v1\nkind: Pod\nmetadata: [unclosed\n' >"${m}/garbage.yaml"
  printf 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: Bad_Name\nspec:\n  containers:\n  - name: app\n    image: busybox\n' >"${m}/badname.yaml"
  { printf 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: longimage\nspec:\n  containers:\n  - name: app\n    image: '
    head -c 65536 /dev/zero | tr '\0' a
    printf '\n'; } >"${m}/longimage.yaml"
  port="$(kk_free_port)"
  start_mk "${dir}" "${port}" --pod-manifest-path "${m}"
  if ! took="$(wait_running "${port}" "${STATIC}" 20)"; then
    result FAIL e "bad manifests: the good static pod not Running; see ${dir}/stderr.log"
    stop_mk
    return
  fi
  # Two retries of the long image name, at least, before looking at the log.
  sleep 2
  local alive=no
  kk_pid_alive "${MK_PID}" && alive=yes
  stop_mk
  longest="$(awk '{ if (length > n) n = length } END { print n + 0 }' "${dir}/stderr.log")"
  local missing=()
  for want in 'spec.restartPolicyy' 'spec.containers\[0\].volumeMountz' 'spec.volumes\[0\].glusterfsz' '2 YAML documents' 'garbage.yaml' 'Bad_Name'; do
    grep -q "${want}" "${dir}/stderr.log" || missing+=("${want}")
  done
  if [[ "${alive}" != yes ]] || crashed "${dir}/stderr.log"; then
    result FAIL e "bad manifests: minikubelet died; see ${dir}/stderr.log"
  elif ((${#missing[@]} > 0)); then
    result FAIL e "bad manifests: no warning names ${missing[*]}"
  elif ((longest > 2048)); then
    result FAIL e "bad manifests: a log line of ${longest} bytes"
  else
    result PASS e "6 bad manifests: no crash, static pod Running in ${took}s, warnings name the unknown fields, the second document, the bad YAML and name; longest log line ${longest} bytes"
  fi
}

# --- f: bad credentials on the kubelet API ------------------------------------
case_f() {
  local dir="${WORK}/f" port api_port code
  mkdir -p "${dir}/pki"
  local p="${dir}/pki"
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=chaos-ca -keyout "${p}/ca.key" -out "${p}/ca.crt" 2>/dev/null
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=other-ca -keyout "${p}/other.key" -out "${p}/other.crt" 2>/dev/null
  for who in good bad; do
    local ca=ca
    [[ "${who}" == bad ]] && ca=other
    openssl req -newkey rsa:2048 -nodes -subj "/CN=${who}-client" -keyout "${p}/${who}.key" -out "${p}/${who}.csr" 2>/dev/null
    openssl x509 -req -in "${p}/${who}.csr" -CA "${p}/${ca}.crt" -CAkey "${p}/${ca}.key" -CAcreateserial -days 1 -out "${p}/${who}.crt" 2>/dev/null
  done
  port="$(kk_free_port)"
  api_port="$(kk_free_port)"
  while [[ "${api_port}" == "${port}" ]]; do api_port="$(kk_free_port)"; done
  mkdir -p "${dir}"
  "${MK}" --node-name "${NODE}" --root-dir "${dir}/root" --eviction-hard "${KK_EVICTION_HARD}" --address 127.0.0.1 --read-only-port "${port}" \
    --port "${api_port}" --healthz-port 0 --client-ca-file "${p}/ca.crt" --pod-manifest-path "${MANIFESTS}" \
    >>"${dir}/stdout.log" 2>>"${dir}/stderr.log" &
  MK_PID=$!
  if ! wait_running "${port}" "${STATIC}" 20 >/dev/null; then
    result FAIL f "minikubelet did not start; see ${dir}/stderr.log"
    stop_mk
    return
  fi
  local url="https://127.0.0.1:${api_port}/pods"
  kcode() { curl --noproxy '*' -sk -o /dev/null -w '%{http_code}' --max-time 5 "$@" "${url}" 2>/dev/null || true; }
  local ok=1 line=""
  code="$(kcode)"
  line+="no credentials ${code}; "
  [[ "${code}" == 401 ]] || ok=0
  code="$(kcode -H 'Authorization: Bearer not-a-token')"
  line+="a bearer token it cannot check ${code}; "
  [[ "${code}" == 401 ]] || ok=0
  code="$(kcode --cert "${p}/bad.crt" --key "${p}/bad.key")"
  line+="a client certificate of another CA ${code}; "
  [[ "${code}" == 401 || "${code}" == 000 ]] || ok=0
  code="$(kcode --cert "${p}/good.crt" --key "${p}/good.key")"
  line+="its client CA's certificate ${code}"
  [[ "${code}" == 200 ]] || ok=0
  stop_mk
  if ((ok)); then
    result PASS f "kubelet API: ${line}"
  else
    result FAIL f "kubelet API: ${line} (want 401, 401, 401 or a refused handshake, 200)"
  fi
}

# --- h: safer defaults ---------------------------------------------------------
# Standalone with no --read-only-port and anonymous requests let in: no
# read-only server (upstream's readOnlyPort 0), and a warning that anyone can
# exec into the containers.
case_h() {
  local dir="${WORK}/h" port url conf
  mkdir -p "${dir}"
  port="$(kk_free_port)"
  url="https://127.0.0.1:${port}"
  "${MK}" --node-name "${NODE}" --root-dir "${dir}/root" --eviction-hard "${KK_EVICTION_HARD}" --address 127.0.0.1 --port "${port}" --healthz-port 0 \
    --anonymous-auth=true --pod-manifest-path "${MANIFESTS}" >>"${dir}/stdout.log" 2>>"${dir}/stderr.log" &
  MK_PID=$!
  if ! wait_running "${url}" "${STATIC}" 20 >/dev/null; then
    result FAIL h "minikubelet did not start; see ${dir}/stderr.log"
    stop_mk
    return
  fi
  conf="$(curl --noproxy '*' -skf --max-time 2 "${url}/configz" | jq -r 'if .kubeletconfig then (.kubeletconfig.readOnlyPort // 0) else "none" end' 2>/dev/null || true)"
  stop_mk
  if [[ "${conf}" != 0 ]] || grep -q 'http://' "${dir}/stdout.log"; then
    result FAIL h "defaults: /configz readOnlyPort ${conf:-?}, want 0 (and no http:// server announced)"
  elif ! grep -q 'lets anyone without credentials exec, attach and port-forward' "${dir}/stderr.log"; then
    result FAIL h "--anonymous-auth with AlwaysAllow: no warning that anyone can exec"
  else
    result PASS h "defaults: no read-only server (/configz readOnlyPort 0); --anonymous-auth with AlwaysAllow warns that anyone can exec, attach and port-forward"
  fi
}

# --- g: two agents' cgroups ---------------------------------------------------
case_g() {
  if [[ "$(id -u)" != 0 ]]; then
    result SKIP g "two agents' cgroup managers side by side: needs root"
    return
  fi
  if (cd "${ROOT}" && go test -tags root -count=1 -run '^TestRootTwoManagers$' -v ./cgroups/ >"${WORK}/g.log" 2>&1) &&
    grep -q -- '--- PASS: TestRootTwoManagers' "${WORK}/g.log"; then
    result PASS g "two agents' cgroup managers on distinct roots of the machine's cgroups: 0 foreign pod cgroups touched (cgroups TestRootTwoManagers)"
  elif grep -q -- '--- SKIP: TestRootTwoManagers' "${WORK}/g.log"; then
    result SKIP g "TestRootTwoManagers skipped: $(grep -A1 -- '--- SKIP' "${WORK}/g.log" | tail -1 | sed 's/^ *//')"
  else
    result FAIL g "cgroups TestRootTwoManagers failed; see ${WORK}/g.log"
  fi
}

for c in ${CASES}; do
  kk_log "case ${c}"
  "case_${c}"
done
printf '%d passed, %d failed, %d skipped\n' "${PASSED}" "${FAILED}" "${SKIPPED}"
((FAILED == 0))

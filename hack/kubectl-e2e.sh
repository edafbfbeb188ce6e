#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# hack/kubectl-e2e.sh: what a cluster user does with a node, through the API
# server and the kubelet API: kubectl logs (-f, --tail, --since,
# --timestamps, --previous, -c), exec (plain, -i, -t), attach, port-forward
# with an HTTP request through it, cp in and out, and the node's
# stats/summary and metrics/cadvisor (not vknode's) through the API
# server's node proxy; plus the kubelet API's
# own refusals: 401 without credentials, 403 for a user without
# nodes/proxy, 4xx for a bad path. Run against upstream kubelet and
# minikubelet, one after the other on the same containerd and control
# plane; every check must pass under each, and the outputs of the two are
# compared (differences that are expected, timestamps and IDs, are
# normalized away; the rest is printed).
#
#   bash hack/containerd-setup.sh && bash hack/containerd-start.sh
#   bash hack/controlplane-setup.sh && bash hack/controlplane-start.sh
#   bash hack/kubectl-e2e.sh
#
# Each kubelet joins as node kk-node with the node credentials of the control
# plane, serves its API on a free port over TLS (minikubelet: a self-signed
# certificate; upstream: the same), trusts the control plane's client CA
# (KK_CLIENT_CA_FILE, which signs the API server's kubelet-client
# certificate), and authenticates and authorizes other callers with
# TokenReview and SubjectAccessReview. It runs in a private mount namespace
# (kk_isolate) with its own root dir. Output: $KK_WORK/kubectl-e2e/.
# The third node is examples/vknode, virtual-kubelet's node with our
# provider (its kubelet API is VK's, with the same authentication).
# KK_E2E_AGENTS (default "upstream minikubelet vknode") picks the kubelets.
#
# kubectl top: before each kubelet starts, metrics-server (v0.8.0, built once
# into KK_APISERVER_CACHE) is started afresh beside the control plane
# (hack/controlplane-start.sh --start-metrics-server: the metrics API
# v1beta1.metrics.k8s.io through the aggregator, a scrape of every kubelet's
# /metrics/resource each 15s), so that the figures of each come from a
# metrics-server that has seen no other kubelet as kk-node. Once the pods
# run, `kubectl top node kk-node` and `kubectl top pod` must give the node's
# CPU and memory and those of logger, reader and web within
# KK_E2E_TOP_TIMEOUT seconds (120; a poll, no fixed wait): a kubelet whose
# node or pods have no figures fails its check, as any other. The figures
# are printed side by side at the end ($KK_WORK/kubectl-e2e/top.txt). It is
# stopped and the metrics API unregistered at the end
# (--stop-metrics-server), so that later stages' nodes are not scraped.
# KK_E2E_TOP=0 leaves it out.
# Needs root.
set -euo pipefail
HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "${HACK_DIR}/lib.sh"

DIR="${KK_WORK}/kubectl-e2e"
AGENTS="${KK_E2E_AGENTS:-upstream minikubelet vknode}"
NODE=kk-node
NS=default
AGENT_PID=""
AGENT_BIN=""
FAILED=0
TOP="${KK_E2E_TOP:-1}"
TOP_TIMEOUT="${KK_E2E_TOP_TIMEOUT:-120}"
TOP_STARTED=0

[[ -S "${KK_SOCK}" ]] || kk_die "no containerd at ${KK_SOCK}: run hack/containerd-start.sh"
[[ "$(id -u)" == 0 ]] || kk_die "needs root (the kubelets run containers)"
[[ -f "${KK_CP_ENV}" ]] || kk_die "no control plane env at ${KK_CP_ENV}: run hack/controlplane-start.sh"
# shellcheck disable=SC1090
source "${KK_CP_ENV}"
[[ -x "${KK_KUBECTL_BIN}" ]] || kk_die "no kubectl at ${KK_KUBECTL_BIN}: run hack/controlplane-setup.sh"
[[ -n "${KK_CLIENT_CA_FILE:-}" && -f "${KK_CLIENT_CA_FILE}" ]] || kk_die "the control plane env names no client CA (KK_CLIENT_CA_FILE)"

kubectl() { "${KK_KUBECTL_BIN}" --kubeconfig "${KK_KUBECONFIG}" "$@"; }
crictl() { "${KK_BIN}/crictl" --runtime-endpoint "${KK_ENDPOINT}" --image-endpoint "${KK_ENDPOINT}" "$@"; }

stop_agent() {
  if [[ -n "${AGENT_PID}" ]] && kk_runs "${AGENT_PID}" "${AGENT_BIN}"; then
    kk_stop_pid agent "${AGENT_PID}" 20 || true
  fi
  AGENT_PID=""
}

cleanup() {
  stop_agent
  if ((TOP_STARTED)); then
    bash "${HACK_DIR}/controlplane-start.sh" --stop-metrics-server || true
  fi
  kubectl -n "${NS}" delete pod -l kk-e2e=1 --force --grace-period=0 >/dev/null 2>&1 || true
  kubectl delete node "${NODE}" >/dev/null 2>&1 || true
  crictl rmp -fa >/dev/null 2>&1 || true
  kk_unmount_under "${DIR}"
}
trap cleanup EXIT

# check NAME CMD...: kk_check, into OUT for AGENT.
check() { kk_check "$@"; }

# expect WANT CMD...: CMD's standard output must be WANT.
expect() {
  local want="$1" got
  shift
  got="$("$@")"
  printf '%s\n' "${got}"
  [[ "${got}" == "${want}" ]] || { printf 'want:\n%s\n' "${want}"; return 1; }
}

# http_code URL CURL_ARGS...: the HTTP status of a request to the kubelet.
http_code() {
  local url="$1"
  shift
  curl -sk -o /dev/null -w '%{http_code}' "$@" "${url}"
}

write_pods() {
  cat >"${DIR}/pods.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: logger, namespace: ${NS}, labels: {kk-e2e: "1"}}
spec:
  nodeName: ${NODE}
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: ${KK_BUSYBOX_IMAGE}
    command: ["sh", "-c", "echo oops >&2; sleep 1; for i in 1 2 3 4 5; do echo line \$i; done; exec sleep 3600"]
  - name: side
    image: ${KK_BUSYBOX_IMAGE}
    command: ["sh", "-c", "echo side car; exec sleep 3600"]
---
apiVersion: v1
kind: Pod
metadata: {name: crasher, namespace: ${NS}, labels: {kk-e2e: "1"}}
spec:
  nodeName: ${NODE}
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  # It fails once, then runs: its previous attempt stays the last
  # termination. (A container that keeps crashing makes --previous racy
  # under upstream kubelet too, which removes the older dead attempt when
  # the newer dies, before the status names the newer.)
  volumes: [{name: marks, emptyDir: {}}]
  containers:
  - name: main
    image: ${KK_BUSYBOX_IMAGE}
    command: ["sh", "-c", "if [ -e /marks/failed ]; then echo again; exec sleep 3600; fi; touch /marks/failed; echo attempt; exit 1"]
    volumeMounts: [{name: marks, mountPath: /marks}]
---
apiVersion: v1
kind: Pod
metadata: {name: reader, namespace: ${NS}, labels: {kk-e2e: "1"}}
spec:
  nodeName: ${NODE}
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: ${KK_BUSYBOX_IMAGE}
    command: ["cat"]
    stdin: true
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: ${NS}, labels: {kk-e2e: "1"}}
spec:
  nodeName: ${NODE}
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: ${KK_WEBSERVER_IMAGE}
    ports: [{containerPort: 80}]
EOF
}

# start NAME: start that kubelet joined as kk-node, its API on $API_PORT.
start() {
  local name="$1" cmd
  case "${name}" in
  upstream)
    kk_write_kubelet_config "${DIR}/kubelet.yaml" "${DIR}/static" "${DIR}/upstream-logs" "${KK_ENDPOINT}" 0 "${API_PORT}" \
      "$(kk_eviction_hard_yaml)"
    # The kubelet API as a joined node serves it: client certificates from
    # the cluster's client CA, tokens and authorization by webhook.
    sed -i -e '/^authentication:/d' -e '/^authorization:/d' -e 's/^address: .*/address: 0.0.0.0/' "${DIR}/kubelet.yaml"
    cat >>"${DIR}/kubelet.yaml" <<EOF
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: ${KK_CLIENT_CA_FILE}}
authorization: {mode: Webhook}
EOF
    cmd=("${KK_KUBELET_BIN}" --config="${DIR}/kubelet.yaml" --kubeconfig="${KK_NODE_KUBECONFIG}"
      --root-dir="${DIR}/upstream-root" --cert-dir="${DIR}/upstream-pki" --hostname-override="${NODE}"
      --node-ip="${NODE_IP}" --v=2)
    ;;
  minikubelet)
    cmd=("${DIR}/bin/minikubelet" --container-runtime-endpoint "${KK_ENDPOINT}" --kubeconfig "${KK_NODE_KUBECONFIG}"
      --node-name "${NODE}" --node-ip "${NODE_IP}" --root-dir "${DIR}/minikubelet-root" --address 0.0.0.0
      --port "${API_PORT}" --read-only-port 0 --healthz-port 0 --client-ca-file "${KK_CLIENT_CA_FILE}"
      --authentication-token-webhook --authorization-mode Webhook -v
      --cgroups-per-qos=false --eviction-hard "${KK_EVICTION_HARD}") # as upstream's configuration here (lib.sh)
    ;;
  vknode)
    # virtual-kubelet's node with our provider: VK's own kubelet API routes
    # and authentication (client certificates, TokenReview,
    # SubjectAccessReview). VK lists configMaps, secrets and services
    # cluster-wide, which a node's credentials may not: the admin's.
    cmd=("${DIR}/bin/vknode" --container-runtime-endpoint "${KK_ENDPOINT}" --kubeconfig "${KK_KUBECONFIG}"
      --node-name "${NODE}" --node-ip "${NODE_IP}" --root-dir "${DIR}/vknode-root"
      --port "${API_PORT}" --client-ca-file "${KK_CLIENT_CA_FILE}" --eviction-hard "${KK_EVICTION_HARD}" -v)
    ;;
  *) kk_die "unknown agent ${name} (upstream, minikubelet or vknode)" ;;
  esac
  kk_log "${name}: starting"
  kk_isolate "${DIR}/${name}-var-lib-kubelet" "${cmd[@]}"
  AGENT_BIN="${cmd[0]}"
  setsid "${KK_ISOLATED_CMD[@]}" >"${DIR}/${name}.log" 2>&1 </dev/null &
  AGENT_PID=$!
  local i
  for i in $(seq 120); do
    [[ "$(kubectl get node "${NODE}" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" == True ]] && return 0
    kk_pid_alive "${AGENT_PID}" || { tail -n 30 "${DIR}/${name}.log" >&2; kk_die "${name} exited; see ${DIR}/${name}.log"; }
    sleep 0.5
  done
  tail -n 30 "${DIR}/${name}.log" >&2
  kk_die "${name}: node ${NODE} not Ready after 60s"
}

# run_checks: the pods created, every check run, the pods deleted.
run_checks() {
  kubectl apply -f "${DIR}/pods.yaml" >/dev/null
  kubectl -n "${NS}" wait --for=condition=Ready pod/logger pod/reader pod/web --timeout=90s >/dev/null ||
    { kubectl -n "${NS}" get pods -o wide >&2; FAILED=1; return; }
  # The crasher has failed once and runs again.
  kubectl -n "${NS}" wait --for=condition=Ready pod/crasher --timeout=60s >/dev/null || true

  # The runtime copies a container's stdout and stderr from two pipes: the
  # logger writes to stderr a second before stdout, so that the file's order
  # is known. Its last line is there before the checks begin.
  local i
  for i in $(seq 60); do
    kubectl -n "${NS}" logs logger -c main 2>/dev/null | grep -qx 'line 5' && break
    sleep 0.5
  done
  check logs expect $'oops\nline 1\nline 2\nline 3\nline 4\nline 5' kubectl -n "${NS}" logs logger -c main
  check logs-container expect 'side car' kubectl -n "${NS}" logs logger -c side
  check logs-tail expect $'line 4\nline 5' kubectl -n "${NS}" logs logger -c main --tail 2
  check logs-since expect $'oops\nline 1\nline 2\nline 3\nline 4\nline 5' kubectl -n "${NS}" logs logger -c main --since 1h
  check logs-limit expect 'oops' kubectl -n "${NS}" logs logger -c main --limit-bytes 4
  check logs-timestamps bash -c "${KK_KUBECTL_BIN} --kubeconfig ${KK_KUBECONFIG} -n ${NS} logs logger -c main --timestamps | head -1 | grep -E '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z oops$'"
  check logs-previous expect 'attempt' kubectl -n "${NS}" logs crasher --previous
  check logs-follow bash -c "timeout 3 ${KK_KUBECTL_BIN} --kubeconfig ${KK_KUBECONFIG} -n ${NS} logs -f logger -c side; [ \$? = 124 ]"
  check logs-unknown-container bash -c "! ${KK_KUBECTL_BIN} --kubeconfig ${KK_KUBECONFIG} -n ${NS} logs logger -c nosuch"

  check exec expect 'hello' kubectl -n "${NS}" exec logger -c main -- echo hello
  check exec-exit-code bash -c "${KK_KUBECTL_BIN} --kubeconfig ${KK_KUBECONFIG} -n ${NS} exec logger -c main -- sh -c 'exit 3'; [ \$? = 3 ]"
  check exec-stdin expect 'from stdin' bash -c "echo 'from stdin' | ${KK_KUBECTL_BIN} --kubeconfig ${KK_KUBECONFIG} -n ${NS} exec -i logger -c main -- cat"
  # A tty needs a terminal on kubectl's side: script(1) gives it one. The
  # session stays a second, so that kubectl has the output before it ends.
  # script's input stays open for 10 s: at the end of its input script
  # writes a NUL and hangs up the session, which raced the session's output
  # (the NUL before it, or no output at all, under either kubelet; the
  # carriage returns and any NUL are dropped).
  check exec-tty bash -c "sleep 10 | script -qec \"${KK_KUBECTL_BIN} --kubeconfig ${KK_KUBECONFIG} -n ${NS} exec -it logger -c main -- sh -c 'tty; sleep 1'\" /dev/null | tr -d '\r\000' | grep -E '^/dev/pts/[0-9]+$'"
  check attach bash -c "(echo 'through attach'; sleep 2) | timeout 5 ${KK_KUBECTL_BIN} --kubeconfig ${KK_KUBECONFIG} -n ${NS} attach -i reader -c main | grep -x 'through attach'"

  local port
  port="$(kk_free_port)"
  kubectl -n "${NS}" port-forward pod/web "${port}:80" >"${OUT}/port-forward.log" 2>&1 &
  local pf=$!
  check port-forward bash -c "for i in \$(seq 50); do curl -fsS -o /dev/null http://127.0.0.1:${port}/ && exit 0; sleep 0.2; done; exit 1"
  kill "${pf}" 2>/dev/null || true
  wait "${pf}" 2>/dev/null || true

  printf 'copied in\n' >"${OUT}/cp-in.src"
  check cp-in kubectl -n "${NS}" cp "${OUT}/cp-in.src" "logger:/tmp/cp-in" -c main
  check cp-in-read expect 'copied in' kubectl -n "${NS}" exec logger -c main -- cat /tmp/cp-in
  check cp-out bash -c "${KK_KUBECTL_BIN} --kubeconfig ${KK_KUBECONFIG} -n ${NS} cp logger:/tmp/cp-in ${OUT}/cp-out.dst -c main && grep -x 'copied in' ${OUT}/cp-out.dst"

  check stats-summary bash -c "${KK_KUBECTL_BIN} --kubeconfig ${KK_KUBECONFIG} get --raw /api/v1/nodes/${NODE}/proxy/stats/summary >${OUT}/summary.json && python3 -c '
import json, sys
s = json.load(open(\"${OUT}/summary.json\"))
assert s[\"node\"][\"nodeName\"] == \"${NODE}\", s[\"node\"]
assert s[\"node\"][\"cpu\"][\"usageCoreNanoSeconds\"] > 0 and s[\"node\"][\"memory\"][\"workingSetBytes\"] > 0
pods = {p[\"podRef\"][\"name\"]: p for p in s[\"pods\"] if p[\"podRef\"][\"namespace\"] == \"${NS}\"}
for name in (\"logger\", \"reader\", \"web\"):
    p = pods[name]
    assert \"usageCoreNanoSeconds\" in p[\"cpu\"], (name, p.get(\"cpu\"))
    assert p[\"memory\"][\"workingSetBytes\"] > 0, (name, p.get(\"memory\"))
print(\"ok\", sorted(pods))
'"
  # kubectl top: metrics-server's scrape of the kubelet's /metrics/resource
  # (authorized as nodes/metrics), through the aggregator.
  if [[ "${TOP}" == 1 ]]; then
    check top top_figures
  fi

  # /metrics/cadvisor through the node proxy: a running container of ours
  # has its CPU time, labelled with its pod (minikubelet: from the runtime's
  # CRI stats). Only minikubelet: upstream kubelet's cAdvisor finds the
  # containers' cgroups (/k8s.io/<id>) but labels none of them here, since
  # it asks containerd at its default socket, not at this harness's private
  # one (the series have id= and empty pod, container, image); and
  # virtual-kubelet's router serves no /metrics/cadvisor. A few scrapes are
  # tried: the stats of a new container come with the next relist.
  if [[ "${AGENT}" == minikubelet ]]; then
    check metrics-cadvisor bash -c "for i in \$(seq 15); do ${KK_KUBECTL_BIN} --kubeconfig ${KK_KUBECONFIG} get --raw /api/v1/nodes/${NODE}/proxy/metrics/cadvisor >${OUT}/cadvisor.prom && python3 -c '
import re, sys
for line in open(\"${OUT}/cadvisor.prom\"):
    m = re.match(r\"container_cpu_usage_seconds_total\\{(.*)\\} (\\S+)\", line)
    if not m:
        continue
    labels = dict(re.findall(r\"(\\w+)=\\\"([^\\\"]*)\\\"\", m.group(1)))
    if (labels.get(\"namespace\"), labels.get(\"pod\"), labels.get(\"container\")) == (\"${NS}\", \"logger\", \"main\") and float(m.group(2)) > 0:
        print(\"ok container_cpu_usage_seconds_total ${NS}/logger main\")
        sys.exit(0)
sys.exit(1)
' && exit 0; sleep 1; done; echo 'no container_cpu_usage_seconds_total > 0 for ${NS}/logger main'; exit 1"
  fi

  scrape_metrics "${OUT}/metrics"

  # The kubelet API itself: refusals.
  local api="https://${NODE_IP}:${API_PORT}"
  check api-no-credentials expect 401 http_code "${api}/pods"
  check api-forbidden expect 403 http_code "${api}/pods" -H "Authorization: Bearer ${KK_NOBODY_TOKEN}"
  check api-admin-pods expect 200 http_code "${api}/pods" -H "Authorization: Bearer ${KK_APISERVER_ADMIN_TOKEN:-${KK_APISERVER_TOKEN}}"
  # A path that decodes to a traversal: a kubelet refuses it (4xx).
  # virtual-kubelet's router (Go's ServeMux) answers any path with a dot
  # segment with a redirect to the cleaned path, which reads nothing either.
  local bad_path_codes='4[0-9][0-9]'
  [[ "${AGENT}" == vknode ]] && bad_path_codes='301'
  check api-bad-path bash -c "c=\$(curl -sk -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer ${KK_APISERVER_ADMIN_TOKEN:-${KK_APISERVER_TOKEN}}' '${api}/containerLogs/${NS}/logger/..%2f..%2fetc'); echo \$c; [[ \$c =~ ^${bad_path_codes}\$ ]]"

  # No controller manager runs here: the pods are deleted while the kubelet
  # runs, which confirms their end.
  kubectl -n "${NS}" delete pod -l kk-e2e=1 --timeout=60s >/dev/null || true
}

# scrape_metrics DIR: the kubelet's expositions through the API server's
# node proxy, one file per endpoint, for hack/metrics-compare. An endpoint
# that does not answer leaves an empty file (every family of it missing).
scrape_metrics() {
  local dir="$1" path
  mkdir -p "${dir}"
  for path in metrics metrics/resource metrics/probes metrics/cadvisor; do
    if ! kubectl get --raw "/api/v1/nodes/${NODE}/proxy/${path}" >"${dir}/${path//\//-}.txt" 2>"${dir}/${path//\//-}.err"; then
      kk_log "${AGENT}: /${path} did not answer: $(head -c 200 "${dir}/${path//\//-}.err")"
      : >"${dir}/${path//\//-}.txt"
    fi
  done
}

# compare_metrics OURS: OURS' expositions beside upstream kubelet's
# (hack/metrics-compare): a family kube-prometheus reads that upstream
# serves and OURS does not, or one served under upstream's name with
# another type, labels or buckets, fails, unless it is on the recorded
# known list.
compare_metrics() {
  local ours="$1" mc="${HACK_DIR}/metrics-compare"
  [[ -d "${DIR}/upstream/metrics" && -d "${DIR}/${ours}/metrics" ]] || return 0
  if (cd "${mc}" && go run . -required required.txt -known known.txt -report "${DIR}/metrics-compare-${ours}.md" \
    "${DIR}/upstream/metrics" "${DIR}/${ours}/metrics") >"${DIR}/metrics-compare-${ours}.out" 2>&1; then
    kk_log "$(head -2 "${DIR}/metrics-compare-${ours}.out")"
  else
    cat "${DIR}/metrics-compare-${ours}.out"
    kk_log "metrics of ${ours} differ from upstream kubelet's (${DIR}/metrics-compare-${ours}.md)"
    FAILED=1
  fi
}

# top_figures: poll kubectl top, up to TOP_TIMEOUT seconds, until it gives
# the CPU and memory of node NODE and of the pods logger, reader and web.
# The figures go to OUT/top-node.out and OUT/top-pods.out, the metrics API's
# own objects (unrounded) to OUT/top-node.json and OUT/top-pods.json, and
# the wait's length to OUT/top-wait.out; what has figures, to standard
# output (the same under every kubelet that passes, so compared as the
# other outputs).
top_figures() {
  local t0=${SECONDS} node pods missing name
  while :; do
    node="$(kubectl top node "${NODE}" --no-headers 2>&1)" || node=""
    pods="$(kubectl -n "${NS}" top pod --no-headers 2>&1)" || pods=""
    missing=""
    [[ -n "${node}" ]] || missing="node ${NODE}"
    for name in logger reader web; do
      awk -v n="${name}" '$1 == n && NF >= 3 { found = 1 } END { exit !found }' <<<"${pods}" ||
        missing+="${missing:+, }pod ${name}"
    done
    [[ -n "${missing}" ]] || break
    if ((SECONDS - t0 >= TOP_TIMEOUT)); then
      printf 'no figures within %ss for: %s\nkubectl top node: %s\nkubectl top pod: %s\n' "${TOP_TIMEOUT}" "${missing}" \
        "$(kubectl top node "${NODE}" 2>&1)" "$(kubectl -n "${NS}" top pod 2>&1)"
      return 1
    fi
    sleep 2
  done
  printf '%s\n' "${node}" >"${OUT}/top-node.out"
  printf '%s\n' "${pods}" >"${OUT}/top-pods.out"
  printf '%s\n' "$((SECONDS - t0))" >"${OUT}/top-wait.out"
  kubectl get --raw "/apis/metrics.k8s.io/v1beta1/nodes/${NODE}" >"${OUT}/top-node.json" 2>&1 || true
  kubectl get --raw "/apis/metrics.k8s.io/v1beta1/namespaces/${NS}/pods" >"${OUT}/top-pods.json" 2>&1 || true
  printf 'node %s: cpu, memory\npods with cpu and memory: logger reader web\n' "${NODE}"
}

# top_side_by_side: the figures of kubectl top under each kubelet that gave
# them, one column a kubelet: the node's (CPU, its share of allocatable,
# memory, its share) and each pod's (CPU, memory); then the pods' figures
# as the metrics API has them (kubectl top rounds a few hundred KiB to
# 0Mi), and how long kubectl top took to give them all once the checks
# before it were done.
top_side_by_side() {
  local agent row
  printf 'kubectl top through metrics-server %s (--metric-resolution=%s), node %s and its pods\n' \
    "${KK_METRICS_SERVER_VERSION}" "${KK_METRICS_RESOLUTION:-15s}" "${NODE}"
  printf '%-14s' ''
  for agent in ${AGENTS}; do printf ' %-24s' "${agent}"; done
  printf '\n'
  for row in "node ${NODE}" "pod logger" "pod reader" "pod web" "pod crasher"; do
    printf '%-14s' "${row}"
    for agent in ${AGENTS}; do
      if [[ "${row}" == node* ]]; then
        printf ' %-24s' "$(awk '{ print $2, $3, $4, $5 }' "${DIR}/${agent}/top-node.out" 2>/dev/null || true)"
      else
        printf ' %-24s' "$(awk -v n="${row#pod }" '$1 == n { print $2, $3 }' "${DIR}/${agent}/top-pods.out" 2>/dev/null || true)"
      fi
    done
    printf '\n'
  done
  printf 'metrics API, unrounded (pod: CPU in cores, working set in KiB)\n'
  for row in logger reader web crasher; do
    printf '%-14s' "pod ${row}"
    for agent in ${AGENTS}; do
      printf ' %-24s' "$(python3 -c '
import json, sys
try:
    items = json.load(open(sys.argv[1]))["items"]
except Exception:
    sys.exit(0)
def cores(q):
    return int(q[:-1]) / {"n": 1e9, "u": 1e6, "m": 1e3}[q[-1]] if q[-1] in "num" else float(q)
def kib(q):
    for suffix, f in (("Ki", 1), ("Mi", 1024), ("Gi", 1024 * 1024)):
        if q.endswith(suffix):
            return int(q[:-2]) * f
    return int(q) // 1024
for p in items:
    if p["metadata"]["name"] == sys.argv[2]:
        print("%.4f %dKi" % (sum(cores(c["usage"]["cpu"]) for c in p["containers"]),
                             sum(kib(c["usage"]["memory"]) for c in p["containers"])))
' "${DIR}/${agent}/top-pods.json" "${row}" 2>/dev/null || true)"
    done
    printf '\n'
  done
  printf '%-14s' 'top wait'
  for agent in ${AGENTS}; do
    printf ' %-24s' "$(sed 's/$/s/' "${DIR}/${agent}/top-wait.out" 2>/dev/null || true)"
  done
  printf '\n'
}

# normalize FILE: FILE with what differs by nature masked: times, IDs,
# ports, and the stderr line of kubectl cp's tar, which kubectl drops when
# the copy ends first (under either kubelet, about one run in three).
normalize() {
  sed -E -e 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z/TIME/g; s/[0-9a-f]{64}/ID/g; s/port [0-9]+/port PORT/g' \
    -e "/^tar: removing leading '\/' from member names\$/d" "$1"
}

main() {
  kk_unmount_under "${DIR}"
  rm -rf "${DIR}"
  mkdir -p "${DIR}/static" "${DIR}/bin"
  kk_share_dir "${DIR}"
  NODE_IP="$(kk_node_ip)"
  [[ -f "${KK_IMAGES}/webserver.oci.tar" ]] || kk_die "${KK_IMAGES}/webserver.oci.tar missing: run hack/containerd-setup.sh"
  kk_ctr images import --base-name "${KK_WEBSERVER_IMAGE%:*}" "${KK_IMAGES}/webserver.oci.tar" >/dev/null
  kk_build_upstream kubelet "${KK_KUBELET_BIN}"
  (cd "${HACK_DIR}/.." && go build -o "${DIR}/bin/minikubelet" ./examples/minikubelet &&
    go build -o "${DIR}/bin/vknode" ./examples/vknode)
  write_pods
  for AGENT in ${AGENTS}; do
    OUT="${DIR}/${AGENT}"
    mkdir -p "${OUT}"
    crictl rmp -fa >/dev/null 2>&1 || true
    kubectl delete node "${NODE}" >/dev/null 2>&1 || true
    API_PORT="$(kk_free_port)"
    if [[ "${TOP}" == 1 ]]; then
      TOP_STARTED=1
      bash "${HACK_DIR}/controlplane-start.sh" --start-metrics-server
    fi
    start "${AGENT}"
    run_checks
    stop_agent
    kubectl delete node "${NODE}" >/dev/null 2>&1 || true
  done
  # Each node's outputs beside upstream kubelet's, where both ran.
  local ours f differ
  for ours in minikubelet vknode; do
    [[ -d "${DIR}/upstream" && -d "${DIR}/${ours}" ]] || continue
    differ=0
    for f in "${DIR}/upstream"/*.txt; do
      f="$(basename "${f}")"
      if ! diff <(normalize "${DIR}/upstream/${f}") <(normalize "${DIR}/${ours}/${f}") >"${DIR}/diff-${ours}-${f}"; then
        differ=1
        kk_log "output differs: ${ours} ${f} (${DIR}/diff-${ours}-${f})"
      fi
    done
    ((differ == 0)) && kk_log "the outputs of upstream kubelet and ${ours} agree"
  done
  # Only minikubelet: vknode serves virtual-kubelet's metrics, not a kubelet's.
  compare_metrics minikubelet
  if [[ "${TOP}" == 1 ]]; then
    top_side_by_side >"${DIR}/top.txt"
    cat "${DIR}/top.txt" >&2
  fi
  return "${FAILED}"
}

main "$@"

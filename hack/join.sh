#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# hack/join.sh: a node joins a real cluster as `kubeadm join` joins a
# kubelet, under upstream kubelet and then under minikubelet, with the same
# files, and what each node became is compared (issue 36; the table and an
# operator's walkthrough are in docs/real-node.md).
#
#   bash hack/containerd-setup.sh && bash hack/containerd-start.sh
#   bash hack/controlplane-setup.sh   # kube-apiserver, kube-controller-manager, kube-scheduler, kubectl
#   bash hack/join.sh
#
# 1. The cluster: a control plane of its own (hack/controlplane-start.sh with
#    KK_CP_CLUSTER=1, KK_WORK $KK_WORK/join/cp): etcd, kube-apiserver with
#    bootstrap tokens and --kubelet-certificate-authority, and
#    kube-controller-manager (CSR signing with a short signing duration,
#    KK_JOIN_SIGNING_DURATION, default 2m, and approval of kubelets' client
#    CSRs; node lifecycle, garbage collection, the PV binder) and
#    kube-scheduler.
# 2. What `kubeadm init` leaves for a joining node: a bootstrap token secret
#    in kube-system (group system:bootstrappers:kubeadm:default-node-token),
#    the ClusterRoleBindings kubeadm creates for it (node-bootstrapper, the
#    auto-approval of its client CSR and of nodes' renewals, get nodes), the
#    kubelet-config ConfigMap with a kubeadm-style KubeletConfiguration and
#    the Role and RoleBinding that let bootstrappers and nodes read it.
# 3. What `kubeadm join` does on the node: it reads that ConfigMap with the
#    bootstrap token into config.yaml, writes bootstrap-kubelet.conf (the
#    token and the cluster's CA) and starts the kubelet with --config,
#    --bootstrap-kubeconfig, --kubeconfig (not there yet) and the flags of
#    kubeadm-flags.env. Each kubelet runs in a private mount namespace
#    (kk_isolate) with a root dir and cert dir of its own, on the containerd
#    of hack/containerd-start.sh, as node kk-join.
# 4. Checks, for each kubelet (any failure fails the run):
#    - minikubelet only: a bootstrap token that is expired gets a clear
#      error and the kubelet keeps running; started with a token that the
#      cluster does not know yet, it logs the refusal, keeps retrying, and
#      joins once the token's secret is created (upstream kubelet exits on
#      a refused CSR and relies on its supervisor to restart it);
#    - the node registers and turns Ready, its healthz port answers ok (what
#      kubeadm join waits for); its client certificate is
#      issued by CSR (CN system:node:kk-join, O system:nodes, client auth),
#      its kubelet.conf names it;
#    - its serving CSR (kubernetes.io/kubelet-serving, with its addresses)
#      is approved here as an operator approves it, the certificate is
#      served, and the API server verifies it: kubectl logs and exec work;
#    - pods created without a node are placed on it by the scheduler and
#      turn Ready; the resolv.conf and /etc/hosts of pods with dnsPolicy
#      ClusterFirst (hostname and subdomain), Default,
#      ClusterFirstWithHostNet (hostNetwork) and None (dnsConfig) are read
#      through exec;
#    - within KK_JOIN_ROTATION_TIMEOUT (240s) the client certificate is
#      rotated (a new serial, a CSR of the node itself, auto-approved) and
#      the serving certificate too; once the first two have expired, the
#      node's Lease is still renewed, kubectl logs and exec still work (the
#      new certificates used without a restart) and the node is Ready.
# 5. The two nodes compared: the Node object (labels, taints, address
#    types, capacity, allocatable), each pod's resolv.conf and /etc/hosts
#    (pod IPs masked) and the certificates' subjects, issuers, usages and
#    the names in them, and the CSRs' signers, usages and requestors. Any
#    difference fails the run; the outputs are under $KK_WORK/join/<kubelet>.
#
# Environment: KK_JOIN_AGENTS (default "upstream minikubelet"),
# KK_JOIN_SIGNING_DURATION (2m), KK_JOIN_ROTATION_TIMEOUT (240). Needs root.
set -euo pipefail
HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "${HACK_DIR}/lib.sh"

DIR="${KK_WORK}/join"
CP_WORK="${DIR}/cp"
CP_DIR="${CP_WORK}/controlplane"
AGENTS="${KK_JOIN_AGENTS:-upstream minikubelet}"
SIGNING_DURATION="${KK_JOIN_SIGNING_DURATION:-2m}"
ROTATION_TIMEOUT="${KK_JOIN_ROTATION_TIMEOUT:-240}"
NODE=kk-join
NS=default
AGENT_PID=""
AGENT_BIN=""
APPROVER_PID=""
FAILED=0

[[ -S "${KK_SOCK}" ]] || kk_die "no containerd at ${KK_SOCK}: run hack/containerd-start.sh"
[[ "$(id -u)" == 0 ]] || kk_die "needs root (the kubelets run containers)"
for b in "${KK_KUBECTL_BIN}" "${KK_KUBELET_BIN}" "${KK_CONTROLLER_MANAGER_BIN}" "${KK_SCHEDULER_BIN}"; do
  [[ -x "${b}" || "${b}" == "${KK_KUBELET_BIN}" ]] || kk_die "${b} missing: run hack/controlplane-setup.sh"
done
command -v openssl >/dev/null || kk_die "openssl not found"

kubectl() { "${KK_KUBECTL_BIN}" --kubeconfig "${CP_DIR}/kubeconfig" "$@"; }
crictl() { "${KK_BIN}/crictl" --runtime-endpoint "${KK_ENDPOINT}" --image-endpoint "${KK_ENDPOINT}" "$@"; }

stop_agent() {
  if [[ -n "${AGENT_PID}" ]] && kk_runs "${AGENT_PID}" "${AGENT_BIN}"; then
    kk_stop_pid agent "${AGENT_PID}" 20 || true
  fi
  [[ -z "${AGENT_PID}" ]] || wait "${AGENT_PID}" 2>/dev/null || true
  AGENT_PID=""
}

stop_approver() {
  if [[ -n "${APPROVER_PID}" ]] && kk_pid_alive "${APPROVER_PID}"; then
    kill "${APPROVER_PID}" 2>/dev/null || true
    wait "${APPROVER_PID}" 2>/dev/null || true
  fi
  APPROVER_PID=""
}

# forget_node: what one kubelet's run left in the cluster and the runtime.
forget_node() {
  kubectl -n "${NS}" delete pod -l kk-join=1 --force --grace-period=0 >/dev/null 2>&1 || true
  kubectl delete node "${NODE}" >/dev/null 2>&1 || true
  kubectl delete csr --all >/dev/null 2>&1 || true
  crictl rmp -fa >/dev/null 2>&1 || true
}

cleanup() {
  local status=$?
  stop_agent
  stop_approver
  if [[ -f "${CP_DIR}/kubeconfig" ]]; then forget_node; fi
  KK_WORK="${CP_WORK}" bash "${HACK_DIR}/controlplane-stop.sh" >"${DIR}/controlplane-stop.log" 2>&1 || status=1
  kk_unmount_under "${DIR}"
  exit "${status}"
}

# check NAME CMD...: kk_check, into OUT for AGENT.
check() { kk_check "$@"; }

# wait_until SECONDS CMD...: poll CMD every half second until it succeeds.
wait_until() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || return 1
    if [[ -n "${AGENT_PID}" ]] && ! kk_pid_alive "${AGENT_PID}"; then
      kk_log "${AGENT} exited; see ${OUT}/kubelet.log"
      return 1
    fi
    sleep 0.5
  done
}

# ---- the cluster, as kubeadm init leaves it --------------------------------

start_cluster() {
  kk_log "starting a cluster of its own (signing duration ${SIGNING_DURATION})"
  KK_WORK="${CP_WORK}" KK_CP_CLUSTER=1 KK_CP_SIGNING_DURATION="${SIGNING_DURATION}" KK_NODE_NAME="${NODE}" \
    bash "${HACK_DIR}/controlplane-start.sh" >"${DIR}/controlplane-start.log" 2>&1 ||
    { tail -n 30 "${DIR}/controlplane-start.log"; kk_die "hack/controlplane-start.sh failed"; }
  # shellcheck disable=SC1091
  source "${CP_DIR}/env"
  CLUSTER_CA="${KK_CLIENT_CA_FILE}"
}

expiry_in() { date -u -d "$1" +%Y-%m-%dT%H:%M:%SZ; }

write_cluster_objects() {
  kk_kubeadm_cluster_objects | kubectl apply -f - >/dev/null
  # The kubelet API on a free port, and serving certificates by CSR.
  kubectl -n kube-system create configmap kubelet-config --from-literal=kubelet="$(kk_kubeadm_kubelet_config \
    "${CLUSTER_CA}" "${KK_ENDPOINT}" "${DIR}/pod-logs" "${DIR}/manifests" "${API_PORT}" "${HEALTHZ_PORT}" "serverTLSBootstrap: true")" >/dev/null
}

# approver: approve the node's serving CSRs as they come, as an operator
# (or a serving-certificate approver) does; kube-controller-manager approves
# only client certificates.
approver() {
  while true; do
    kk_approve_serving_csrs "system:node:${NODE}"
    sleep 1
  done
}

# ---- one kubelet's join ------------------------------------------------------

# write_bootstrap_kubeconfig FILE TOKEN: bootstrap-kubelet.conf as kubeadm
# join writes it.
write_bootstrap_kubeconfig() { kk_kubeadm_bootstrap_kubeconfig "$1" "${KK_APISERVER_URL}" "${KK_APISERVER_CA}" "$2"; }

# start NAME BOOTSTRAP_KUBECONFIG: start that kubelet with kubeadm join's
# command line.
start() {
  local name="$1" boot="$2" cmd
  local common=(--config="${OUT}/config.yaml" --bootstrap-kubeconfig="${boot}" --kubeconfig="${OUT}/kubelet.conf"
    --root-dir="${OUT}/root" --cert-dir="${OUT}/pki" --hostname-override="${NODE}" --node-ip="${NODE_IP}")
  case "${name}" in
  upstream) cmd=("${KK_KUBELET_BIN}" "${common[@]}" --v=2) ;;
  minikubelet) cmd=("${DIR}/bin/minikubelet" "${common[@]}" -v) ;;
  *) kk_die "unknown kubelet ${name} (upstream or minikubelet)" ;;
  esac
  kk_isolate "${DIR}/${name}-var-lib-kubelet" "${cmd[@]}"
  AGENT_BIN="${cmd[0]}"
  setsid "${KK_ISOLATED_CMD[@]}" >>"${OUT}/kubelet.log" 2>&1 </dev/null &
  AGENT_PID=$!
}

node_ready() {
  [[ "$(kubectl get node "${NODE}" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" == True ]]
}

# cert_facts FILE: what a certificate says that must be the same under both
# kubelets: subject, issuer, usages and names (IP addresses masked unless
# they are the node's), not its key, serial or dates.
cert_facts() {
  openssl x509 -in "$1" -noout -subject -issuer -ext keyUsage,extendedKeyUsage,subjectAltName,basicConstraints 2>&1 |
    sed -E "s/${NODE_IP//./\\.}/NODE_IP/g"
}

serial_of() { openssl x509 -in "$1" -noout -serial 2>/dev/null; }

# max_end FILE...: the latest notAfter of the certificates, in seconds since
# the epoch.
max_end() {
  local f end max=0
  for f in "$@"; do
    end="$(date -u -d "$(openssl x509 -in "${f}" -noout -enddate | cut -d= -f2)" +%s)"
    ((end > max)) && max="${end}"
  done
  printf '%s\n' "${max}"
}

# csr_facts: each decided CSR of the node by signer: its usages, requestor
# (bootstrap token IDs masked) and conditions, sorted. A CSR not yet decided
# is left out: a rotating node asks for its next certificate at a time of
# its own, so one may appear between settle_csrs and this listing (upstream
# kubelet's did, in CI), and its approval a second later is the approver's.
csr_facts() {
  kubectl get csr -o json | python3 -c '
import json, re, sys
rows = []
for c in json.load(sys.stdin)["items"]:
    user = re.sub(r"^system:bootstrap:[a-z0-9]{6}$", "system:bootstrap:TOKEN_ID", c["spec"]["username"])
    conds = ",".join(sorted(x["type"] for x in c.get("status", {}).get("conditions", [])))
    if not conds:
        continue
    rows.append("%s usages=%s requestor=%s groups=%s expirationSeconds=%s %s" % (
        c["spec"]["signerName"], ",".join(c["spec"].get("usages", [])), user,
        ",".join(sorted(g for g in c["spec"].get("groups", []) if g != "system:authenticated")),
        c["spec"].get("expirationSeconds"), conds))
for r in sorted(set(rows)):
    print(r)
'
}

# pending_csrs: how many of the node's CSRs have no condition yet.
pending_csrs() {
  kubectl get csr -o jsonpath='{range .items[*]}{.status.conditions[*].type}{"\t"}{.spec.username}{"\n"}{end}' |
    awk -F'\t' -v u="system:node:${NODE}" '$1 == "" && $2 == u' | wc -l
}

# settle_csrs: before the CSRs are compared, let a rotation in flight land.
# With two-minute certificates the node asks for its next one every minute
# or so, and a CSR made a moment before the comparison would still be pending
# (its approval, by the approver or kube-controller-manager, a second away).
settle_csrs() {
  local i
  for ((i = 0; i < 30; i++)); do
    kk_approve_serving_csrs "system:node:${NODE}"
    [[ "$(pending_csrs)" == 0 ]] && return 0
    sleep 1
  done
  kk_log "${NODE}: CSRs still pending after 30s"
}

# node_facts: the Node object's labels, taints, address types (values masked
# but the node's IP and name), capacity and allocatable.
node_facts() {
  kubectl get node "${NODE}" -o json | python3 -c '
import json, sys
n = json.load(sys.stdin)
ip, name = sys.argv[1], sys.argv[2]
out = {
    "labels": n["metadata"].get("labels", {}),
    "taints": n["spec"].get("taints", []),
    "addresses": [{"type": a["type"], "address": {ip: "NODE_IP", name: "NODE_NAME"}.get(a["address"], "OTHER")} for a in n["status"]["addresses"]],
    "capacity": n["status"]["capacity"],
    "allocatable": n["status"]["allocatable"],
    "podCIDR": n["spec"].get("podCIDR"),
    "providerID": n["spec"].get("providerID"),
    "unschedulable": n["spec"].get("unschedulable", False),
}
print(json.dumps(out, indent=2, sort_keys=True))
' "${NODE_IP}" "${NODE}"
}

write_pods() {
  local p policy extra
  : >"${DIR}/pods.yaml"
  for p in cluster-first default host-net none; do
    extra=""
    case "${p}" in
    cluster-first)
      policy=ClusterFirst
      extra="  hostname: web-0
  subdomain: web"
      ;;
    default) policy=Default ;;
    host-net)
      policy=ClusterFirstWithHostNet
      extra="  hostNetwork: true"
      ;;
    none)
      policy=None
      extra="  dnsConfig:
    nameservers: [192.0.2.53]
    searches: [example.test]
    options: [{name: ndots, value: \"2\"}, {name: edns0}]"
      ;;
    esac
    cat >>"${DIR}/pods.yaml" <<EOF
---
apiVersion: v1
kind: Pod
metadata: {name: dns-${p}, namespace: ${NS}, labels: {kk-join: "1"}}
spec:
  dnsPolicy: ${policy}
${extra}
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: ${KK_BUSYBOX_IMAGE}
    command: ["sh", "-c", "echo started; exec sleep 3600"]
EOF
  done
}

# sort_options: resolv.conf with the words of its options line sorted:
# upstream kubelet merges a pod's dnsConfig options through a map, so their
# order changes from one sandbox to the next (edns0 ndots:2, then ndots:2
# edns0); the resolver does not care.
sort_options() {
  local line
  while IFS= read -r line; do
    if [[ "${line}" == "options "* ]]; then
      printf 'options %s\n' "$(tr -s ' ' '\n' <<<"${line#options }" | sort | paste -sd ' ')"
    else
      printf '%s\n' "${line}"
    fi
  done
}

# mask_hosts: /etc/hosts with the pod's and the node's own addresses masked.
mask_hosts() {
  sed -E -e "s/^${NODE_IP//./\\.}([[:space:]])/NODE_IP\\1/" -e 's/^10\.[0-9]+\.[0-9]+\.[0-9]+([[:space:]])/POD_IP\1/' \
    -e 's/^fd[0-9a-f:]+([[:space:]])/POD_IPV6\1/'
}

# bad_tokens: minikubelet refused an expired token and a token the cluster
# does not know yet; it keeps running and joins once the token exists.
bad_tokens() {
  local expired unknown
  expired="$(kk_kubeadm_token)"
  kk_kubeadm_token_secret "${expired}" "$(expiry_in '-1 hour')" | kubectl apply -f - >/dev/null
  write_bootstrap_kubeconfig "${OUT}/bootstrap-expired.conf" "${expired}"
  start minikubelet "${OUT}/bootstrap-expired.conf"
  check token-expired-refused wait_until 30 grep -q 'Unauthorized' "${OUT}/kubelet.log"
  # It goes on retrying: still there, still not a node, its log saying so.
  check token-expired-keeps-running bash -c "sleep 5; kill -0 ${AGENT_PID} && ! ${KK_KUBECTL_BIN} --kubeconfig ${CP_DIR}/kubeconfig get node ${NODE}"
  grep -m1 'Unauthorized' "${OUT}/kubelet.log" >"${OUT}/token-expired-message.txt" || true
  stop_agent

  unknown="$(kk_kubeadm_token)"
  write_bootstrap_kubeconfig "${OUT}/bootstrap-unknown.conf" "${unknown}"
  mv "${OUT}/kubelet.log" "${OUT}/kubelet-expired.log"
  start minikubelet "${OUT}/bootstrap-unknown.conf"
  check token-unknown-refused wait_until 30 grep -q 'Unauthorized' "${OUT}/kubelet.log"
  kk_kubeadm_token_secret "${unknown}" "$(expiry_in '+1 hour')" | kubectl apply -f - >/dev/null
  kk_log "${AGENT}: token created; the node must join now"
}

# join AGENT: one kubelet's whole run.
join() {
  OUT="${DIR}/${AGENT}"
  mkdir -p "${OUT}"
  forget_node
  # kubeadm join: config.yaml from the kubelet-config ConfigMap, read with
  # the bootstrap token, as the node's only credential.
  local token
  token="$(kk_kubeadm_token)"
  kk_kubeadm_token_secret "${token}" "$(expiry_in '+1 hour')" | kubectl apply -f - >/dev/null
  write_bootstrap_kubeconfig "${OUT}/bootstrap-kubelet.conf" "${token}"
  check config-from-cluster bash -c "${KK_KUBECTL_BIN} --kubeconfig ${OUT}/bootstrap-kubelet.conf -n kube-system get configmap kubelet-config -o jsonpath='{.data.kubelet}' >${OUT}/config.yaml && [ -s ${OUT}/config.yaml ]"
  if [[ "${AGENT}" == minikubelet ]]; then
    # It joins with a token created while it runs (bad_tokens).
    bad_tokens
  else
    start "${AGENT}" "${OUT}/bootstrap-kubelet.conf"
  fi
  check registered-ready wait_until 120 node_ready
  # kubeadm join's kubelet-check: the healthz port answers.
  check healthz-port bash -c "[ \"\$(curl -sS --max-time 5 http://127.0.0.1:${HEALTHZ_PORT}/healthz)\" = ok ]"
  node_ready || { tail -n 40 "${OUT}/kubelet.log" >&2; return; }

  local client="${OUT}/pki/kubelet-client-current.pem" server="${OUT}/pki/kubelet-server-current.pem"
  check client-cert-issued bash -c "grep -q 'client-certificate: ${client}' ${OUT}/kubelet.conf && openssl x509 -in ${client} -noout -checkend 0"
  cert_facts "${client}" >"${OUT}/cert-client.txt" 2>&1 || true
  check serving-cert-issued wait_until 60 test -s "${server}"
  cert_facts "${server}" >"${OUT}/cert-server.txt" 2>&1 || true
  check client-cert-chains openssl verify -CAfile "${CLUSTER_CA}" "${client}"
  check serving-cert-chains openssl verify -CAfile "${CLUSTER_CA}" "${server}"

  # The scheduler places the pods; the API server reaches the kubelet with
  # the serving certificate verified.
  kubectl apply -f "${DIR}/pods.yaml" >/dev/null
  check pods-ready kubectl -n "${NS}" wait --for=condition=Ready pod -l kk-join=1 --timeout=120s
  check pods-scheduled bash -c "${KK_KUBECTL_BIN} --kubeconfig ${CP_DIR}/kubeconfig -n ${NS} get pods -l kk-join=1 -o jsonpath='{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}' | sort -u | grep -qx ${NODE}"
  check logs bash -c "[ \"\$(${KK_KUBECTL_BIN} --kubeconfig ${CP_DIR}/kubeconfig -n ${NS} logs dns-cluster-first)\" = started ]"
  local p
  for p in cluster-first default host-net none; do
    kubectl -n "${NS}" exec "dns-${p}" -- cat /etc/resolv.conf 2>&1 | sort_options >"${OUT}/resolv-${p}.txt" || FAILED=1
    kubectl -n "${NS}" exec "dns-${p}" -- cat /etc/hosts 2>&1 | mask_hosts >"${OUT}/hosts-${p}.txt" || FAILED=1
  done
  check cluster-first-dns bash -c "grep -qx 'nameserver 10.96.0.10' ${OUT}/resolv-cluster-first.txt && grep -q '^search default.svc.cluster.local svc.cluster.local cluster.local' ${OUT}/resolv-cluster-first.txt"

  # Rotation: a new client certificate by the node's own CSR, a new serving
  # certificate, the Lease renewed after both, logs served with the new one.
  local client_serial server_serial
  client_serial="$(serial_of "${client}")"
  server_serial="$(serial_of "${server}")"
  openssl x509 -in "${client}" -out "${OUT}/first-client.pem"
  openssl x509 -in "${server}" -out "${OUT}/first-server.pem"
  check client-cert-rotated wait_until "${ROTATION_TIMEOUT}" bash -c "[ \"\$(openssl x509 -in ${client} -noout -serial)\" != '${client_serial}' ]"
  check serving-cert-rotated wait_until "${ROTATION_TIMEOUT}" bash -c "[ \"\$(openssl x509 -in ${server} -noout -serial)\" != '${server_serial}' ]"
  # Past the first certificates' end: every connection the node and the
  # API server open must now present the new ones.
  local first_end
  first_end="$(max_end "${OUT}/first-client.pem" "${OUT}/first-server.pem")"
  check first-certs-expired wait_until "${ROTATION_TIMEOUT}" bash -c "[ \$(date -u +%s) -gt ${first_end} ]"
  check lease-renewed-after-expiry wait_until 30 bash -c "t=\$(${KK_KUBECTL_BIN} --kubeconfig ${CP_DIR}/kubeconfig -n kube-node-lease get lease ${NODE} -o jsonpath='{.spec.renewTime}'); [ \"\$(date -u -d \"\$t\" +%s)\" -gt ${first_end} ]"
  check logs-after-rotation bash -c "[ \"\$(${KK_KUBECTL_BIN} --kubeconfig ${CP_DIR}/kubeconfig -n ${NS} logs dns-cluster-first)\" = started ]"
  check exec-after-rotation bash -c "[ \"\$(${KK_KUBECTL_BIN} --kubeconfig ${CP_DIR}/kubeconfig -n ${NS} exec dns-cluster-first -- echo hi)\" = hi ]"
  check still-ready node_ready
  settle_csrs
  csr_facts >"${OUT}/csrs.txt" 2>&1 || FAILED=1
  node_facts >"${OUT}/node.json" 2>&1 || FAILED=1

  stop_agent
  forget_node
}

main() {
  kk_unmount_under "${DIR}"
  rm -rf "${DIR}"
  mkdir -p "${DIR}/bin" "${DIR}/manifests" "${DIR}/pod-logs"
  kk_share_dir "${DIR}"
  trap cleanup EXIT
  NODE_IP="$(kk_node_ip)"
  API_PORT="$(kk_free_port)"
  HEALTHZ_PORT="$(kk_free_port)"
  while [[ "${HEALTHZ_PORT}" == "${API_PORT}" ]]; do HEALTHZ_PORT="$(kk_free_port)"; done
  [[ " ${AGENTS} " != *" upstream "* ]] || kk_build_upstream kubelet "${KK_KUBELET_BIN}"
  (cd "${HACK_DIR}/.." && go build -o "${DIR}/bin/minikubelet" ./examples/minikubelet)
  start_cluster
  write_cluster_objects
  write_pods
  approver >"${DIR}/approver.log" 2>&1 &
  APPROVER_PID=$!
  for AGENT in ${AGENTS}; do
    kk_log "${AGENT}: joining as ${NODE}"
    join
  done
  stop_approver

  # The nodes side by side.
  local f differ=0
  if [[ -d "${DIR}/upstream" && -d "${DIR}/minikubelet" ]]; then
    for f in node.json csrs.txt cert-client.txt cert-server.txt resolv-{cluster-first,default,host-net,none}.txt \
      hosts-{cluster-first,default,host-net,none}.txt; do
      if ! diff -u "${DIR}/upstream/${f}" "${DIR}/minikubelet/${f}" >"${DIR}/diff-${f}.txt"; then
        differ=1
        kk_log "differs from upstream kubelet: ${f}"
        cat "${DIR}/diff-${f}.txt"
      fi
    done
    if ((differ == 0)); then kk_log "the joined nodes of upstream kubelet and minikubelet agree"; else FAILED=1; fi
  fi
  ((FAILED == 0)) || kk_log "FAILED: see the lines above and ${DIR}"
  return "${FAILED}"
}

main "$@"

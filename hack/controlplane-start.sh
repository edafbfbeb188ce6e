#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# hack/controlplane-start.sh: start a private Kubernetes control plane (etcd +
# kube-apiserver, no controller-manager, no scheduler) on 127.0.0.1 for the
# API-server end-to-end tests. Run hack/controlplane-setup.sh first. With
# KK_CP_CLUSTER=1 it is the control plane a node joins as kubeadm joins a
# kubelet (hack/join.sh; step 7 below).
#
#   1. If the etcd and kube-apiserver named in $KK_WORK/etcd.pid and
#      $KK_WORK/kube-apiserver.pid are ours (right binary, our data/cert dir)
#      and /readyz answers with our token, they are reused. Otherwise
#      hack/controlplane-stop.sh clears what an earlier run left.
#   2. Picks free loopback ports and writes, under $KK_WORK/controlplane:
#      an RSA service-account key (openssl), a token file with an admin token
#      (group system:masters), a node token (system:node:$KK_NODE_NAME in
#      group system:nodes) and a token of a user no role binds
#      (kubeletkit-nobody, KK_NOBODY_TOKEN); a client CA (pki/client-ca.{crt,key}) that
#      kubelets are told to trust (--client-ca-file), and the client
#      certificate it signs for kube-apiserver to call kubelets with
#      (pki/apiserver-kubelet-client.{crt,key}, CN
#      kube-apiserver-kubelet-client, as kubeadm's).
#   3. Starts etcd (data in $KK_WORK/controlplane/etcd-data, log and PID in
#      $KK_WORK/etcd.{log,pid}), waits for /health.
#   4. Starts kube-apiserver (self-signed serving cert in
#      $KK_WORK/controlplane/pki, log and PID in $KK_WORK/kube-apiserver.{log,pid})
#      and waits until /readyz says ok. It reaches kubelets (logs, exec,
#      port-forward, proxy) with the kubelet client certificate, at their
#      Node's InternalIP, else Hostname
#      (--kubelet-preferred-address-types=InternalIP,Hostname), without
#      verifying their serving certificates. The aggregation layer is on
#      (the front proxy's CA and client certificate, aggregator routing to
#      EndpointSlices), for metrics-server and the cluster's aggregated APIs.
#   5. Creates what a controller-manager and kubeadm would: the `default`
#      ServiceAccount and the `kube-root-ca.crt` ConfigMap in the `default`
#      namespace, and the ClusterRoleBinding kubeadm:apiserver-kubelet-client
#      (user kube-apiserver-kubelet-client to ClusterRole
#      system:kubelet-api-admin), so that a kubelet that authorizes with
#      SubjectAccessReview lets the API server in.
#   6. With KK_CP_CLUSTER=1 only: the client CA is the cluster's CA, as
#      kubeadm's ca.crt: kube-apiserver trusts client certificates it signs
#      (--client-ca-file), accepts bootstrap tokens
#      (--enable-bootstrap-token-auth) and verifies kubelets' serving
#      certificates with it (--kubelet-certificate-authority); then
#      kube-controller-manager starts (kubeadm's controllers: every default
#      one, bootstrapsigner and tokencleaner; it signs CSRs with the cluster
#      CA for KK_CP_SIGNING_DURATION, and approves kubelets' client CSRs;
#      node lifecycle, garbage collection, the PV binder, service-account
#      tokens; log and PID in $KK_WORK/kube-controller-manager.{log,pid}),
#      and kube-scheduler (log and PID in $KK_WORK/kube-scheduler.{log,pid}),
#      both with the admin kubeconfig, without leader election, their
#      health ports on free loopback ports; they are ready when /healthz
#      says ok. Neither is restarted by --restart-apiserver.
#   7. Writes $KK_WORK/controlplane/kubeconfig (admin),
#      $KK_WORK/controlplane/kubeconfig-node (node identity) and
#      $KK_WORK/controlplane/env (with KK_KUBECTL, the kubectl that
#      hack/controlplane-setup.sh built, and KK_CLIENT_CA_FILE), and prints
#      the API server URL.
#   8. With KK_METRICS_SERVER=1 only: metrics-server and the metrics API
#      (start_metrics_server below), after the env file.
#
# A running control plane is reused only when it was started with the
# kubelet client certificate and the aggregation layer (an older
# hack/controlplane-start.sh did not);
# otherwise it is stopped and started afresh. Reusing it writes KK_KUBECTL
# into its env file again.
#
# hack/controlplane-start.sh --restart-apiserver restarts the kube-apiserver
# of a running control plane with its very command line (same port, certs,
# tokens and etcd), waits until it is ready and updates the pid and env
# files: the API-server tests use it to check that clients resume their
# watches. It fails when no control plane of $KK_WORK runs.
#
# hack/controlplane-start.sh --start-metrics-server starts metrics-server
# beside a running control plane and registers the metrics API (kubectl
# top); --stop-metrics-server unregisters it and stops metrics-server
# (hack/kubectl-e2e.sh uses both).
#
# hack/controlplane-start.sh --stop-apiserver stops the kube-apiserver of a
# running control plane (etcd goes on) and keeps its command line;
# --start-apiserver starts it again with that command line and waits until
# it is ready: the edge autonomy test cuts a node off its API server with
# them (docs/localstate.md).
#
# Environment variables:
#   KK_WORK                 work dir (default /tmp/kubeletkit-e2e)
#   KK_K8S_VERSION          kube-apiserver version to run (default v1.36.3)
#   KK_APISERVER_CACHE      dir of the kube-apiserver-<version> binary ($KK_WORK/bin)
#   KK_START_TIMEOUT        seconds to wait for each of etcd and the API server (60)
#   KK_NODE_NAME            node whose identity the node token carries (kk-node)
#   KK_APISERVER_VERBOSITY  kube-apiserver --v (default 2)
#   KK_ETCD_PROGRESS_INTERVAL  etcd --experimental-watch-progress-notify-interval (1s)
#   KK_SA_ADMISSION=0       disable the ServiceAccount admission plugin instead
#                           of creating the default ServiceAccount
#   KK_CP_CLUSTER=1         the control plane a node joins (step 6)
#   KK_CP_ADDRESS           the address kube-apiserver binds and advertises
#                           (default 127.0.0.1; another one, in a network
#                           namespace of its own, is the kubernetes
#                           Service's endpoint)
#   KK_CP_SIGNING_DURATION  kube-controller-manager --cluster-signing-duration
#                           with KK_CP_CLUSTER=1 (default 8760h)
#   KK_METRICS_SERVER=1     start metrics-server too (step 8)
#   KK_METRICS_SERVER_VERSION  its release (v0.8.0), built once into
#                           KK_APISERVER_CACHE/metrics-server-<version>/
#   KK_METRICS_RESOLUTION   its --metric-resolution (15s)
#   KK_METRICS_SERVER_VERBOSITY  its --v (1)
set -euo pipefail
HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "${HACK_DIR}/lib.sh"

START_TIMEOUT="${KK_START_TIMEOUT:-60}"
NODE_NAME="${KK_NODE_NAME:-kk-node}"
VERBOSITY="${KK_APISERVER_VERBOSITY:-2}"
SA_ADMISSION="${KK_SA_ADMISSION:-1}"
ETCD_PROGRESS_INTERVAL="${KK_ETCD_PROGRESS_INTERVAL:-1s}"
CLUSTER="${KK_CP_CLUSTER:-0}"
ADDRESS="${KK_CP_ADDRESS:-127.0.0.1}"
SIGNING_DURATION="${KK_CP_SIGNING_DURATION:-8760h}"
PKI="${KK_CP_DIR}/pki"
TOKENS="${KK_CP_DIR}/tokens.csv"
SA_KEY="${KK_CP_DIR}/sa.key"
CA_FILE="${KK_CP_DIR}/ca.crt"
CLIENT_CA="${PKI}/client-ca.crt"
CLIENT_CA_KEY="${PKI}/client-ca.key"
KUBELET_CLIENT="${PKI}/apiserver-kubelet-client"
FRONT_PROXY_CA="${PKI}/front-proxy-ca.crt"
FRONT_PROXY_CA_KEY="${PKI}/front-proxy-ca.key"
FRONT_PROXY_CLIENT="${PKI}/front-proxy-client"
SA_ISSUER="https://kubernetes.default.svc.cluster.local"

# The node name goes into the token file and the node's identity: it must be
# a DNS subdomain, as a Node's name is.
[[ "${#NODE_NAME}" -le 253 && "${NODE_NAME}" =~ ^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$ ]] ||
  kk_die "KK_NODE_NAME=${NODE_NAME} is not a valid node name (lower-case DNS subdomain)"
command -v etcd >/dev/null 2>&1 || kk_die "etcd not found: run hack/controlplane-setup.sh"
[[ -x "${KK_APISERVER_BIN}" ]] || kk_die "${KK_APISERVER_BIN} missing: run hack/controlplane-setup.sh"
if [[ "${CLUSTER}" == 1 ]]; then
  for b in "${KK_CONTROLLER_MANAGER_BIN}" "${KK_SCHEDULER_BIN}"; do
    [[ -x "${b}" ]] || kk_die "${b} missing (KK_CP_CLUSTER=1): run hack/controlplane-setup.sh"
  done
fi
for b in openssl curl; do
  command -v "${b}" >/dev/null 2>&1 || kk_die "${b} not found"
done

# kcurl ARGS...: curl against our API server with the admin token.
kcurl() {
  curl --noproxy '*' -sS --max-time 10 --cacert "${CA_FILE}" \
    -H "Authorization: Bearer ${ADMIN_TOKEN}" "$@"
}

# env_value KEY: the value of KEY in the env file of a running control plane.
env_value() {
  sed -n "s/^export $1=//p" "${KK_CP_ENV}" 2>/dev/null | head -1
}

# running: true when both daemons in the pid files are ours and the API
# server answers /readyz with the token in the env file.
running() {
  local etcd_pid api_pid url
  etcd_pid="$(kk_pidfile_pid "${KK_ETCD_PIDFILE}" kk_is_our_etcd)"
  api_pid="$(kk_pidfile_pid "${KK_APISERVER_PIDFILE}" kk_is_our_apiserver)"
  [[ -n "${etcd_pid}" && -n "${api_pid}" && -f "${KK_CP_ENV}" && -f "${CA_FILE}" ]] || return 1
  ADMIN_TOKEN="$(env_value KK_APISERVER_TOKEN)"
  url="$(env_value KK_APISERVER_URL)"
  [[ -n "${ADMIN_TOKEN}" && -n "${url}" ]] || return 1
  [[ "$(kcurl "${url}/readyz" 2>/dev/null)" == ok ]]
}

# reusable: running, on the binary of KK_K8S_VERSION (another version asks
# for a restart), and with the kubelet client certificate this script gives
# it, the client CA and the nobody token in the env file (a control plane
# of an older script lacks them).
reusable() {
  local cmd
  running || return 1
  cmd="$(kk_cmdline "$(kk_pidfile_pid "${KK_APISERVER_PIDFILE}" kk_is_our_apiserver)")"
  [[ "${cmd}" == "${KK_APISERVER_BIN} "* && "${cmd}" == *" --kubelet-client-certificate=${KUBELET_CLIENT}.crt "* &&
    "${cmd}" == *" --requestheader-client-ca-file=${FRONT_PROXY_CA} "* ]] || return 1
  # A cluster is reused as a cluster only, with its controllers running.
  if [[ "${CLUSTER}" == 1 ]]; then
    [[ "${cmd}" == *" --enable-bootstrap-token-auth "* && -n "$(kk_pidfile_pid "${KK_KCM_PIDFILE}" kk_is_our_kcm)" &&
      -n "$(kk_pidfile_pid "${KK_SCHEDULER_PIDFILE}" kk_is_our_scheduler)" ]] || return 1
  else
    [[ "${cmd}" != *" --enable-bootstrap-token-auth "* ]] || return 1
  fi
  [[ -s "${CLIENT_CA}" && "$(env_value KK_CLIENT_CA_FILE)" == "${CLIENT_CA}" && -n "$(env_value KK_NOBODY_TOKEN)" ]]
}

write_credentials() {
  mkdir -p "${KK_CP_DIR}" "${PKI}"
  chmod 0700 "${KK_CP_DIR}"
  # Service-account token signing key; the public half is derived from it.
  openssl genrsa -out "${SA_KEY}" 2048 2>/dev/null || kk_die "openssl genrsa failed"
  chmod 0600 "${SA_KEY}"
  ADMIN_TOKEN="$(openssl rand -hex 32)"
  NODE_TOKEN="$(openssl rand -hex 32)"
  # A user with no role at all: the kubelet API must refuse it (403).
  NOBODY_TOKEN="$(openssl rand -hex 32)"
  # token,user,uid,"group1,group2"
  (
    umask 077
    {
      printf '%s,kubeletkit-admin,kubeletkit-admin,"system:masters"\n' "${ADMIN_TOKEN}"
      printf '%s,system:node:%s,system:node:%s,"system:nodes"\n' "${NODE_TOKEN}" "${NODE_NAME}" "${NODE_NAME}"
      printf '%s,kubeletkit-nobody,kubeletkit-nobody\n' "${NOBODY_TOKEN}"
    } >"${TOKENS}"
  )
  write_client_pki
}

# write_client_pki: the client CA kubelets trust (--client-ca-file) and the
# client certificate it signs for kube-apiserver (--kubelet-client-*): CN
# kube-apiserver-kubelet-client, no organization, for client
# authentication only, as kubeadm issues it; then the front proxy's CA and
# client certificate (CN front-proxy-client), with which the API server's
# aggregator calls aggregated API servers, which trust that CA for its
# X-Remote-* request headers (--requestheader-*, --proxy-client-*), as
# kubeadm's front-proxy-ca and front-proxy-client.
write_client_pki() {
  write_ca_and_client "${CLIENT_CA}" "${CLIENT_CA_KEY}" kubeletkit-client-ca "${KUBELET_CLIENT}" kube-apiserver-kubelet-client
  write_ca_and_client "${FRONT_PROXY_CA}" "${FRONT_PROXY_CA_KEY}" kubeletkit-front-proxy-ca "${FRONT_PROXY_CLIENT}" front-proxy-client
}

# write_ca_and_client CA_CRT CA_KEY CA_CN CLIENT CLIENT_CN: a CA and the
# client certificate it signs (CLIENT.crt, CLIENT.key: client
# authentication only, no organization), both valid for ten years.
write_ca_and_client() {
  local ca="$1" ca_key="$2" ca_cn="$3" client="$4" client_cn="$5" ext="${PKI}/openssl-client.cnf"
  (
    umask 077
    openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 3650 \
      -keyout "${ca_key}" -out "${ca}" -subj "/CN=${ca_cn}" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null ||
      kk_die "openssl: cannot create the CA ${ca_cn}"
    openssl req -newkey rsa:2048 -nodes -sha256 -keyout "${client}.key" -out "${client}.csr" \
      -subj "/CN=${client_cn}" 2>/dev/null || kk_die "openssl: cannot create the key of ${client_cn}"
    printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
      "extendedKeyUsage=clientAuth" >"${ext}"
    openssl x509 -req -sha256 -days 3650 -in "${client}.csr" -CA "${ca}" -CAkey "${ca_key}" \
      -set_serial "0x$(openssl rand -hex 16)" -extfile "${ext}" -out "${client}.crt" 2>/dev/null ||
      kk_die "openssl: cannot sign the certificate of ${client_cn}"
  )
  rm -f "${client}.csr" "${ext}"
  chmod 0644 "${ca}" "${client}.crt"
}

# launch NAME PIDFILE LOG CMD...: start CMD detached (setsid) with its output
# in LOG; the inner shell records its own PID and execs CMD, so PIDFILE holds
# the daemon's PID.
launch() {
  local name="$1" pidfile="$2" log="$3" i
  shift 3
  rm -f "${pidfile}"
  printf '\n==== %s controlplane-start.sh: %s ====\n' "$(date -Is)" "${name}" >>"${log}"
  # shellcheck disable=SC2016 # $$ and $1 are for the inner shell
  setsid bash -c 'echo $$ >"$1"; shift; eval "${KK_CLOSE_FDS}"; exec "$@"' "kk-${name}" "${pidfile}" "$@" \
    </dev/null >>"${log}" 2>&1 &
  for ((i = 0; i < 50; i++)); do
    [[ -s "${pidfile}" ]] && break
    sleep 0.1
  done
  [[ -s "${pidfile}" ]] || kk_die "${name} did not start (no pid file); see ${log}"
}

# wait_for NAME PIDFILE LOG CHECK...: wait up to START_TIMEOUT seconds until
# the command CHECK succeeds, failing early when the daemon exits.
wait_for() {
  local name="$1" pidfile="$2" log="$3" pid deadline
  shift 3
  pid="$(tr -dc '0-9' <"${pidfile}")"
  deadline=$((SECONDS + START_TIMEOUT))
  until "$@"; do
    if ! kk_pid_alive "${pid}"; then
      tail -n 30 "${log}" >&2 || true
      kk_die "${name} (pid ${pid}) exited during startup; see ${log}"
    fi
    if ((SECONDS >= deadline)); then
      tail -n 30 "${log}" >&2 || true
      kk_die "${name} not ready within ${START_TIMEOUT}s; see ${log}"
    fi
    sleep 0.2
  done
}

etcd_healthy() {
  [[ "$(curl --noproxy '*' -sS --max-time 2 "${ETCD_URL}/health" 2>/dev/null)" == *'"health":"true"'* ]]
}

start_etcd() {
  local client_port peer_port
  client_port="$(kk_free_port)"
  peer_port="$(kk_free_port)"
  while [[ "${peer_port}" == "${client_port}" ]]; do peer_port="$(kk_free_port)"; done
  ETCD_URL="http://127.0.0.1:${client_port}"
  local peer_url="http://127.0.0.1:${peer_port}"
  mkdir -p "${KK_ETCD_DATA}"
  chmod 0700 "${KK_ETCD_DATA}"
  # etcd 3.4.23 lacks on-demand watch progress (RequestWatchProgress, 3.4.31+),
  # so the API server's watch cache only learns of newer revisions from
  # events or from etcd's periodic progress notifications (default 10m). A
  # watch or list at a resourceVersion newer than a quiet resource's cache
  # would wait and fail with "Too large resource version"; a short interval
  # keeps every cache within ETCD_PROGRESS_INTERVAL of etcd.
  # `etcd` must stay argv[0] and --data-dir follow --name: kk_is_our_etcd
  # recognises our etcd by that command line.
  launch etcd "${KK_ETCD_PIDFILE}" "${KK_ETCD_LOG}" \
    etcd --name kk --data-dir "${KK_ETCD_DATA}" \
    --listen-client-urls "${ETCD_URL}" --advertise-client-urls "${ETCD_URL}" \
    --listen-peer-urls "${peer_url}" --initial-advertise-peer-urls "${peer_url}" \
    --initial-cluster "kk=${peer_url}" --initial-cluster-state new \
    --initial-cluster-token kubeletkit --logger zap --log-outputs stderr \
    --experimental-watch-progress-notify-interval "${ETCD_PROGRESS_INTERVAL}"
  kk_log "etcd started (pid $(cat "${KK_ETCD_PIDFILE}")) on ${ETCD_URL}"
  wait_for etcd "${KK_ETCD_PIDFILE}" "${KK_ETCD_LOG}" etcd_healthy
}

apiserver_ready() {
  [[ -s "${PKI}/apiserver.crt" ]] || return 1
  # Trust the self-signed serving cert itself for the readiness probe; the
  # CA file for clients is extracted after it answers.
  [[ "$(curl --noproxy '*' -sS --max-time 2 --cacert "${PKI}/apiserver.crt" \
    -H "Authorization: Bearer ${ADMIN_TOKEN}" "${APISERVER_URL}/readyz" 2>/dev/null)" == ok ]]
}

start_apiserver() {
  local port admission=(--enable-admission-plugins=NodeRestriction) cluster=()
  port="$(kk_free_port)"
  APISERVER_URL="https://${ADDRESS}:${port}"
  [[ "${SA_ADMISSION}" == 1 ]] || admission+=(--disable-admission-plugins=ServiceAccount)
  # On loopback nothing can reach the kubernetes Service's endpoint: none is
  # kept. On another address (a cluster in network namespaces,
  # hack/cluster.sh) it is the Service's endpoint, as on a real cluster.
  local endpoints=(--endpoint-reconciler-type=none) issuer="${SA_ISSUER}"
  if [[ "${ADDRESS}" != 127.0.0.1 ]]; then
    # Its self-signed serving certificate names kubernetes.default.svc but
    # not the cluster.local name, so that is the issuer pods can discover
    # (upstream's OIDC discovery spec fetches it from a pod).
    endpoints=(--advertise-address="${ADDRESS}" --endpoint-reconciler-type=lease)
    issuer="https://kubernetes.default.svc"
  fi
  # The aggregation layer, as kubeadm configures it. No kube-proxy runs
  # beside the API server, so a Service's ClusterIP means nothing here: the
  # API server calls webhooks, conversion webhooks and aggregated APIs at
  # their EndpointSlices' addresses (pod IPs routed to the nodes in a
  # cluster; the host address metrics-server listens on for kubectl top). The
  # aggregator authenticates to aggregated API servers as the front proxy,
  # which they trust for the user in X-Remote-User and friends.
  local aggregation=(--enable-aggregator-routing=true
    --requestheader-client-ca-file="${FRONT_PROXY_CA}" --requestheader-allowed-names=front-proxy-client
    --requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group
    --requestheader-extra-headers-prefix=X-Remote-Extra- --proxy-client-cert-file="${FRONT_PROXY_CLIENT}.crt"
    --proxy-client-key-file="${FRONT_PROXY_CLIENT}.key")
  if [[ "${CLUSTER}" == 1 ]]; then
    cluster=(--client-ca-file="${CLIENT_CA}" --enable-bootstrap-token-auth
      --kubelet-certificate-authority="${CLIENT_CA}")
  fi
  # --cert-dir must stay the first flag: kk_is_our_apiserver recognises our
  # API server by it.
  launch kube-apiserver "${KK_APISERVER_PIDFILE}" "${KK_APISERVER_LOG}" \
    "${KK_APISERVER_BIN}" --cert-dir="${PKI}" \
    --etcd-servers="${ETCD_URL}" \
    --bind-address="${ADDRESS}" --secure-port="${port}" \
    --token-auth-file="${TOKENS}" \
    --service-account-issuer="${issuer}" \
    --service-account-key-file="${SA_KEY}" \
    --service-account-signing-key-file="${SA_KEY}" \
    --service-cluster-ip-range=10.96.0.0/16 \
    --authorization-mode=Node,RBAC \
    --kubelet-client-certificate="${KUBELET_CLIENT}.crt" \
    --kubelet-client-key="${KUBELET_CLIENT}.key" \
    --kubelet-preferred-address-types=InternalIP,Hostname \
    "${admission[@]}" \
    "${cluster[@]}" \
    --allow-privileged=true \
    "${endpoints[@]}" \
    "${aggregation[@]}" \
    --profiling=false \
    --v="${VERBOSITY}"
  kk_log "kube-apiserver started (pid $(cat "${KK_APISERVER_PIDFILE}")) on ${APISERVER_URL}"
  wait_for kube-apiserver "${KK_APISERVER_PIDFILE}" "${KK_APISERVER_LOG}" apiserver_ready
  write_ca
}

# write_ca: the self-signed serving cert file holds the serving cert and the
# CA that signed it; clients trust that CA (ca.crt), as with a real cluster.
write_ca() {
  awk -v out="${CA_FILE}.new" '
    /-----BEGIN CERTIFICATE-----/ { n++; buf = "" }
    { buf = buf $0 "\n" }
    /-----END CERTIFICATE-----/ { last = buf }
    END { printf "%s", last > out }' "${PKI}/apiserver.crt"
  mv -f "${CA_FILE}.new" "${CA_FILE}"
  [[ "$(kcurl "${APISERVER_URL}/readyz" 2>&1)" == ok ]] ||
    kk_die "the API server does not verify with ${CA_FILE}"
}

# create_object PATH JSON: POST JSON to PATH; success or AlreadyExists is fine.
create_object() {
  local path="$1" body="$2" code
  code="$(kcurl -o "${KK_CP_DIR}/create.out" -w '%{http_code}' -X POST \
    -H 'Content-Type: application/json' --data "${body}" "${APISERVER_URL}${path}")" || code=000
  [[ "${code}" == 201 || "${code}" == 409 ]]
}

bootstrap_objects() {
  local deadline=$((SECONDS + START_TIMEOUT)) ca_json
  # The API server creates the `default` namespace itself shortly after it
  # turns ready: retry until it exists.
  until create_object /api/v1/namespaces/default/serviceaccounts \
    '{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default","namespace":"default"}}'; do
    ((SECONDS < deadline)) || kk_die "cannot create the default ServiceAccount: $(cat "${KK_CP_DIR}/create.out" 2>/dev/null)"
    sleep 0.2
  done
  ca_json="$(awk '{ printf "%s\\n", $0 }' "${CA_FILE}")"
  create_object /api/v1/namespaces/default/configmaps \
    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"kube-root-ca.crt\",\"namespace\":\"default\"},\"data\":{\"ca.crt\":\"${ca_json}\"}}" ||
    kk_die "cannot create ConfigMap default/kube-root-ca.crt: $(cat "${KK_CP_DIR}/create.out" 2>/dev/null)"
  # kubeadm's binding: the API server's kubelet client may use every
  # kubelet API (nodes/proxy, log, stats, metrics ...).
  create_object /apis/rbac.authorization.k8s.io/v1/clusterrolebindings \
    '{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"kubeadm:apiserver-kubelet-client"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"system:kubelet-api-admin"},"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"kube-apiserver-kubelet-client"}]}' ||
    kk_die "cannot create ClusterRoleBinding kubeadm:apiserver-kubelet-client: $(cat "${KK_CP_DIR}/create.out" 2>/dev/null)"
  rm -f "${KK_CP_DIR}/create.out"
}

healthz_ok() {
  [[ "$(curl --noproxy '*' -sSk --max-time 2 "https://127.0.0.1:$1/healthz" 2>/dev/null)" == ok ]]
}

# start_controllers: kube-controller-manager and kube-scheduler of a cluster
# (step 6). --kubeconfig must stay the first flag: kk_is_our_kcm and
# kk_is_our_scheduler recognise ours by it.
start_controllers() {
  local kcm_port sched_port
  kcm_port="$(kk_free_port)"
  launch kube-controller-manager "${KK_KCM_PIDFILE}" "${KK_KCM_LOG}" \
    "${KK_CONTROLLER_MANAGER_BIN}" --kubeconfig="${KK_KUBECONFIG}" \
    --authentication-kubeconfig="${KK_KUBECONFIG}" --authorization-kubeconfig="${KK_KUBECONFIG}" \
    --bind-address=127.0.0.1 --secure-port="${kcm_port}" \
    --controllers='*,bootstrapsigner,tokencleaner' \
    --cluster-name=kubeletkit \
    --cluster-signing-cert-file="${CLIENT_CA}" --cluster-signing-key-file="${CLIENT_CA_KEY}" \
    --cluster-signing-duration="${SIGNING_DURATION}" \
    --service-account-private-key-file="${SA_KEY}" --root-ca-file="${CA_FILE}" \
    --use-service-account-credentials=false --leader-elect=false \
    --profiling=false --v="${VERBOSITY}"
  kk_log "kube-controller-manager started (pid $(cat "${KK_KCM_PIDFILE}")), health on 127.0.0.1:${kcm_port}"
  wait_for kube-controller-manager "${KK_KCM_PIDFILE}" "${KK_KCM_LOG}" healthz_ok "${kcm_port}"
  sched_port="$(kk_free_port)"
  while [[ "${sched_port}" == "${kcm_port}" ]]; do sched_port="$(kk_free_port)"; done
  launch kube-scheduler "${KK_SCHEDULER_PIDFILE}" "${KK_SCHEDULER_LOG}" \
    "${KK_SCHEDULER_BIN}" --kubeconfig="${KK_KUBECONFIG}" \
    --authentication-kubeconfig="${KK_KUBECONFIG}" --authorization-kubeconfig="${KK_KUBECONFIG}" \
    --bind-address=127.0.0.1 --secure-port="${sched_port}" \
    --leader-elect=false --profiling=false --v="${VERBOSITY}"
  kk_log "kube-scheduler started (pid $(cat "${KK_SCHEDULER_PIDFILE}")), health on 127.0.0.1:${sched_port}"
  wait_for kube-scheduler "${KK_SCHEDULER_PIDFILE}" "${KK_SCHEDULER_LOG}" healthz_ok "${sched_port}"
}

# write_kubeconfig FILE USER TOKEN
write_kubeconfig() {
  local file="$1" user="$2" token="$3" ca_data
  ca_data="$(base64 -w0 <"${CA_FILE}")"
  (
    umask 077
    cat >"${file}.new" <<EOF
# Generated by hack/controlplane-start.sh.
apiVersion: v1
kind: Config
clusters:
- name: kubeletkit
  cluster:
    server: ${APISERVER_URL}
    certificate-authority-data: ${ca_data}
users:
- name: ${user}
  user:
    token: ${token}
contexts:
- name: kubeletkit
  context:
    cluster: kubeletkit
    user: ${user}
current-context: kubeletkit
EOF
  )
  mv -f "${file}.new" "${file}"
}

write_env() {
  (
    umask 077
    cat >"${KK_CP_ENV}.new" <<EOF
# Generated by hack/controlplane-start.sh. Source it or parse "export KEY=VALUE".
export KK_KUBECONFIG=${KK_KUBECONFIG}
export KK_NODE_KUBECONFIG=${KK_CP_DIR}/kubeconfig-node
export KK_APISERVER_URL=${APISERVER_URL}
export KK_APISERVER_TOKEN=${ADMIN_TOKEN}
export KK_APISERVER_CA=${CA_FILE}
export KK_NODE_NAME=${NODE_NAME}
export KK_NODE_TOKEN=${NODE_TOKEN}
export KK_NOBODY_TOKEN=${NOBODY_TOKEN}
export KK_ETCD_ENDPOINT=${ETCD_URL}
export KK_ETCD_PID=$(tr -dc '0-9' <"${KK_ETCD_PIDFILE}")
export KK_APISERVER_PID=$(tr -dc '0-9' <"${KK_APISERVER_PIDFILE}")
export KK_K8S_VERSION=${KK_K8S_VERSION}
export KK_WORK=${KK_WORK}
export KK_CLIENT_CA_FILE=${CLIENT_CA}
export KK_KUBELET_CLIENT_CERT=${KUBELET_CLIENT}.crt
export KK_KUBELET_CLIENT_KEY=${KUBELET_CLIENT}.key
export KK_CP_CLUSTER=${CLUSTER}
EOF
  )
  mv -f "${KK_CP_ENV}.new" "${KK_CP_ENV}"
  write_env_kubectl
}

# write_env_kubectl: set KK_KUBECTL in the env file to the kubectl of
# KK_K8S_VERSION that hack/controlplane-setup.sh built; without one, warn
# and leave it out.
write_env_kubectl() {
  sed -i '/^export KK_KUBECTL=/d' "${KK_CP_ENV}"
  if [[ -x "${KK_KUBECTL_BIN}" ]]; then
    printf 'export KK_KUBECTL=%s\n' "${KK_KUBECTL_BIN}" >>"${KK_CP_ENV}"
  else
    kk_log "warning: ${KK_KUBECTL_BIN} missing (run hack/controlplane-setup.sh): no KK_KUBECTL in ${KK_CP_ENV}"
  fi
}

# restart_apiserver: stop the running kube-apiserver and start it again with
# the same arguments; clients' kubeconfigs stay valid (same URL, same CA).
restart_apiserver() {
  local t0=${SECONDS} pid args=()
  running || kk_die "no running, ready control plane in ${KK_WORK}: run hack/controlplane-start.sh first"
  pid="$(kk_pidfile_pid "${KK_APISERVER_PIDFILE}" kk_is_our_apiserver)"
  mapfile -d '' args <"/proc/${pid}/cmdline"
  ((${#args[@]} > 0)) || kk_die "cannot read the command line of kube-apiserver (pid ${pid})"
  APISERVER_URL="$(env_value KK_APISERVER_URL)"
  cp -f "${CA_FILE}" "${CA_FILE}.before"
  # It stops listening at once on SIGTERM, then can wait on open watches
  # long after: 3s, then SIGKILL.
  kk_stop_pid kube-apiserver "${pid}" 3 || exit 1
  launch kube-apiserver "${KK_APISERVER_PIDFILE}" "${KK_APISERVER_LOG}" "${args[@]}"
  wait_for kube-apiserver "${KK_APISERVER_PIDFILE}" "${KK_APISERVER_LOG}" apiserver_ready
  write_ca
  cmp -s "${CA_FILE}" "${CA_FILE}.before" ||
    kk_die "the restarted API server serves with another CA: kubeconfigs written before no longer verify"
  rm -f "${CA_FILE}.before"
  sed -i "s/^export KK_APISERVER_PID=.*/export KK_APISERVER_PID=$(tr -dc '0-9' <"${KK_APISERVER_PIDFILE}")/" "${KK_CP_ENV}"
  kk_log "kube-apiserver restarted (pid $(cat "${KK_APISERVER_PIDFILE}")) on ${APISERVER_URL} in $((SECONDS - t0))s"
}

# stop_apiserver: stop the kube-apiserver of a running control plane and
# keep its command line for --start-apiserver; etcd goes on.
stop_apiserver() {
  local pid
  running || kk_die "no running, ready control plane in ${KK_WORK}: run hack/controlplane-start.sh first"
  pid="$(kk_pidfile_pid "${KK_APISERVER_PIDFILE}" kk_is_our_apiserver)"
  cp -f "/proc/${pid}/cmdline" "${KK_CP_DIR}/kube-apiserver.cmdline"
  [[ -s "${KK_CP_DIR}/kube-apiserver.cmdline" ]] || kk_die "cannot read the command line of kube-apiserver (pid ${pid})"
  kk_stop_pid kube-apiserver "${pid}" 3 || exit 1
  kk_log "kube-apiserver (pid ${pid}) stopped; hack/controlplane-start.sh --start-apiserver starts it again"
}

# start_stopped_apiserver: start the kube-apiserver that --stop-apiserver
# stopped, with its very command line (same port, certs, tokens and etcd).
start_stopped_apiserver() {
  local t0=${SECONDS} args=()
  [[ -s "${KK_CP_DIR}/kube-apiserver.cmdline" ]] || kk_die "no kube-apiserver stopped by --stop-apiserver in ${KK_WORK}"
  [[ -n "$(kk_pidfile_pid "${KK_ETCD_PIDFILE}" kk_is_our_etcd)" ]] || kk_die "the etcd of ${KK_WORK} does not run"
  [[ -z "$(kk_pidfile_pid "${KK_APISERVER_PIDFILE}" kk_is_our_apiserver)" ]] || kk_die "kube-apiserver runs already"
  ADMIN_TOKEN="$(env_value KK_APISERVER_TOKEN)"
  APISERVER_URL="$(env_value KK_APISERVER_URL)"
  mapfile -d '' args <"${KK_CP_DIR}/kube-apiserver.cmdline"
  cp -f "${CA_FILE}" "${CA_FILE}.before"
  launch kube-apiserver "${KK_APISERVER_PIDFILE}" "${KK_APISERVER_LOG}" "${args[@]}"
  wait_for kube-apiserver "${KK_APISERVER_PIDFILE}" "${KK_APISERVER_LOG}" apiserver_ready
  write_ca
  cmp -s "${CA_FILE}" "${CA_FILE}.before" ||
    kk_die "the restarted API server serves with another CA: kubeconfigs written before no longer verify"
  rm -f "${CA_FILE}.before" "${KK_CP_DIR}/kube-apiserver.cmdline"
  sed -i "s/^export KK_APISERVER_PID=.*/export KK_APISERVER_PID=$(tr -dc '0-9' <"${KK_APISERVER_PIDFILE}")/" "${KK_CP_ENV}"
  kk_log "kube-apiserver started again (pid $(cat "${KK_APISERVER_PIDFILE}")) on ${APISERVER_URL} in $((SECONDS - t0))s"
}

# ---- metrics-server (kubectl top) -----------------------------------------

# kctl ARGS...: the kubectl of KK_K8S_VERSION as the admin.
kctl() { "${KK_KUBECTL_BIN}" --kubeconfig "${KK_KUBECONFIG}" "$@"; }

metrics_server_live() {
  [[ "$(curl --noproxy '*' -sS --max-time 2 --cacert "${KK_MS_DIR}/tls.crt" \
    "https://${MS_HOST}:${MS_PORT}/livez" 2>/dev/null)" == ok ]]
}

metrics_api_available() {
  [[ "$(kctl get apiservice v1beta1.metrics.k8s.io \
    -o jsonpath='{.status.conditions[?(@.type=="Available")].status}' 2>/dev/null)" == True ]]
}

# set_env KEY VALUE: KEY's line in the env file, replaced or added.
set_env() {
  sed -i "/^export $1=/d" "${KK_CP_ENV}"
  printf 'export %s=%s\n' "$1" "$2" >>"${KK_CP_ENV}"
}

# start_metrics_server: metrics-server (KK_METRICS_SERVER_VERSION, built and
# cached on first use) as a host process beside the running control plane,
# and the metrics API v1beta1.metrics.k8s.io registered with the aggregator.
#   - It runs as the ServiceAccount kube-system/metrics-server (RBAC in
#     hack/metrics-server/rbac.yaml), with a token from the TokenRequest API
#     (24h) in $KK_WORK/controlplane/metrics-server/kubeconfig, for the API
#     server, for its delegated authentication and authorization, and for the
#     kubelets (which check it with TokenReview and SubjectAccessReview:
#     nodes/metrics).
#   - The front proxy's CA and header names come from the ConfigMap
#     kube-system/extension-apiserver-authentication, which kube-apiserver
#     writes. Its client-ca-file is there only when kube-apiserver has
#     --client-ca-file (KK_CP_CLUSTER=1): metrics-server is given the client
#     CA itself (--client-ca-file), the CA kubelets trust for the API server
#     here, as kubeadm's ca.crt is both; without it, it logs a missing CA
#     bundle every second or two.
#   - It serves on the host's address on its default route (kk_node_ip, the
#     kubelets' --node-ip) and a free port, with a self-signed certificate
#     for metrics-server.kube-system.svc: the aggregator routes to the
#     address in the Service's EndpointSlice (--enable-aggregator-routing),
#     which may not be a loopback address, and checks that name against the
#     APIService's caBundle (the certificate itself).
#   - It reaches each kubelet at its Node's InternalIP, else Hostname (the
#     address types kube-apiserver uses; the harnesses' kubelets report
#     --node-ip as InternalIP), on the port in the Node's status (the
#     harnesses pick free ports), without verifying the kubelet's serving
#     certificate (--kubelet-insecure-tls): upstream kubelet makes a
#     self-signed one in its --cert-dir at each start, minikubelet and vknode
#     one of their own, and no CA signs them; kube-apiserver here verifies
#     none either.
#   - --metric-resolution KK_METRICS_RESOLUTION (15s; upstream's default is
#     60s): CPU needs two scrapes, so figures appear 15 to 30s after a pod or
#     a node does.
# A metrics-server of this KK_WORK that runs already is stopped first.
start_metrics_server() {
  local t0=${SECONDS} token deadline
  [[ -x "${KK_KUBECTL_BIN}" ]] || kk_die "${KK_KUBECTL_BIN} missing: run hack/controlplane-setup.sh"
  kk_build_metrics_server
  stop_metrics_server_process
  MS_HOST="$(kk_node_ip)"
  MS_PORT="$(kk_free_port)"
  rm -rf "${KK_MS_DIR}"
  mkdir -p "${KK_MS_DIR}"
  chmod 0700 "${KK_MS_DIR}"
  kk_serving_cert "${KK_MS_DIR}" metrics-server.kube-system.svc "IP:${MS_HOST}"
  kctl apply -f "${HACK_DIR}/metrics-server/rbac.yaml" >/dev/null || kk_die "cannot apply hack/metrics-server/rbac.yaml"
  token="$(kctl -n kube-system create token metrics-server --duration=24h)" ||
    kk_die "cannot get a token for ServiceAccount kube-system/metrics-server"
  write_kubeconfig "${KK_MS_DIR}/kubeconfig" system:serviceaccount:kube-system:metrics-server "${token}"
  # --kubeconfig must stay the first flag: kk_is_our_metrics_server
  # recognises ours by it.
  launch metrics-server "${KK_MS_PIDFILE}" "${KK_MS_LOG}" \
    "${KK_METRICS_SERVER_BIN}" --kubeconfig="${KK_MS_DIR}/kubeconfig" \
    --authentication-kubeconfig="${KK_MS_DIR}/kubeconfig" --authorization-kubeconfig="${KK_MS_DIR}/kubeconfig" \
    --client-ca-file="${CLIENT_CA}" \
    --bind-address="${MS_HOST}" --secure-port="${MS_PORT}" \
    --tls-cert-file="${KK_MS_DIR}/tls.crt" --tls-private-key-file="${KK_MS_DIR}/tls.key" \
    --kubelet-preferred-address-types=InternalIP,Hostname --kubelet-use-node-status-port \
    --kubelet-insecure-tls --metric-resolution="${KK_METRICS_RESOLUTION:-15s}" \
    --profiling=false --v="${KK_METRICS_SERVER_VERBOSITY:-1}"
  kk_log "metrics-server started (pid $(cat "${KK_MS_PIDFILE}")) on https://${MS_HOST}:${MS_PORT}"
  wait_for metrics-server "${KK_MS_PIDFILE}" "${KK_MS_LOG}" metrics_server_live
  kctl apply -f - >/dev/null <<EOF || kk_die "cannot register the metrics API"
apiVersion: v1
kind: Service
metadata: {name: metrics-server, namespace: kube-system, labels: {app.kubernetes.io/name: metrics-server}}
spec:
  ports: [{name: https, port: 443, protocol: TCP, targetPort: ${MS_PORT}}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: metrics-server-host
  namespace: kube-system
  labels: {kubernetes.io/service-name: metrics-server, endpointslice.kubernetes.io/managed-by: controlplane-start.kubeletkit.dev}
addressType: IPv4
endpoints: [{addresses: ["${MS_HOST}"], conditions: {ready: true}}]
ports: [{name: https, port: ${MS_PORT}, protocol: TCP}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io, labels: {app.kubernetes.io/name: metrics-server}}
spec:
  group: metrics.k8s.io
  version: v1beta1
  service: {name: metrics-server, namespace: kube-system, port: 443}
  caBundle: $(base64 -w0 <"${KK_MS_DIR}/tls.crt")
  groupPriorityMinimum: 100
  versionPriority: 100
EOF
  deadline=$((SECONDS + START_TIMEOUT))
  until metrics_api_available; do
    kk_pid_alive "$(cat "${KK_MS_PIDFILE}")" || { tail -n 30 "${KK_MS_LOG}" >&2; kk_die "metrics-server exited; see ${KK_MS_LOG}"; }
    if ((SECONDS >= deadline)); then
      kctl get apiservice v1beta1.metrics.k8s.io -o yaml >&2 || true
      kk_die "APIService v1beta1.metrics.k8s.io not Available within ${START_TIMEOUT}s; see ${KK_MS_LOG}"
    fi
    sleep 0.5
  done
  set_env KK_METRICS_SERVER_PID "$(tr -dc '0-9' <"${KK_MS_PIDFILE}")"
  set_env KK_METRICS_SERVER_ENDPOINT "${MS_HOST}:${MS_PORT}"
  kk_log "metrics API v1beta1.metrics.k8s.io available in $((SECONDS - t0))s"
}

# stop_metrics_server_process: stop the metrics-server of this KK_WORK, if
# one runs.
stop_metrics_server_process() {
  local pid
  pid="$(kk_pidfile_pid "${KK_MS_PIDFILE}" kk_is_our_metrics_server)"
  [[ -z "${pid}" ]] || kk_stop_pid metrics-server "${pid}" 5 || exit 1
  rm -f "${KK_MS_PIDFILE}"
}

# stop_metrics_server: unregister the metrics API (an APIService whose
# server is gone makes every client's discovery warn), then stop
# metrics-server. Its RBAC stays.
stop_metrics_server() {
  kctl delete apiservice v1beta1.metrics.k8s.io --ignore-not-found >/dev/null 2>&1 || true
  kctl -n kube-system delete service metrics-server --ignore-not-found >/dev/null 2>&1 || true
  kctl -n kube-system delete endpointslice metrics-server-host --ignore-not-found >/dev/null 2>&1 || true
  stop_metrics_server_process
  if [[ -f "${KK_CP_ENV}" ]]; then
    sed -i -e '/^export KK_METRICS_SERVER_PID=/d' -e '/^export KK_METRICS_SERVER_ENDPOINT=/d' "${KK_CP_ENV}"
  fi
  kk_log "metrics-server stopped, metrics API unregistered"
}

main() {
  local t0=${SECONDS}
  case "${1:-}" in
    "") ;;
    --restart-apiserver)
      restart_apiserver
      return 0
      ;;
    --stop-apiserver)
      stop_apiserver
      return 0
      ;;
    --start-apiserver)
      start_stopped_apiserver
      return 0
      ;;
    --start-metrics-server | --stop-metrics-server)
      running || kk_die "no running, ready control plane in ${KK_WORK}: run hack/controlplane-start.sh first"
      APISERVER_URL="$(env_value KK_APISERVER_URL)"
      if [[ "$1" == --start-metrics-server ]]; then start_metrics_server; else stop_metrics_server; fi
      return 0
      ;;
    *) kk_die "unknown argument ${1} (--restart-apiserver, --stop-apiserver, --start-apiserver, --start-metrics-server or --stop-metrics-server)" ;;
  esac
  mkdir -p "${KK_WORK}"
  if reusable; then
    kk_log "control plane already running and ready (etcd pid $(env_value KK_ETCD_PID), kube-apiserver pid $(env_value KK_APISERVER_PID)); reusing it"
    write_env_kubectl
    if [[ "${KK_METRICS_SERVER:-0}" == 1 && -z "$(kk_pidfile_pid "${KK_MS_PIDFILE}" kk_is_our_metrics_server)" ]]; then
      APISERVER_URL="$(env_value KK_APISERVER_URL)"
      start_metrics_server
    fi
    printf '%s\n' "$(env_value KK_APISERVER_URL)"
    return 0
  fi
  # Clear whatever an earlier or crashed run left (daemons, data, keys).
  "${HACK_DIR}/controlplane-stop.sh" >&2
  write_credentials
  start_etcd
  start_apiserver
  bootstrap_objects
  write_kubeconfig "${KK_KUBECONFIG}" kubeletkit-admin "${ADMIN_TOKEN}"
  write_kubeconfig "${KK_CP_DIR}/kubeconfig-node" "system:node:${NODE_NAME}" "${NODE_TOKEN}"
  [[ "${CLUSTER}" != 1 ]] || start_controllers
  write_env
  [[ "${KK_METRICS_SERVER:-0}" != 1 ]] || start_metrics_server
  kk_log "control plane ready in $((SECONDS - t0))s; env file ${KK_CP_ENV}"
  printf '%s\n' "${APISERVER_URL}"
}

main "$@"

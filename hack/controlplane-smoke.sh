#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# hack/controlplane-smoke.sh: check a running control plane (from
# hack/controlplane-start.sh) with curl, as a kubelet would use it:
#   1. create a Node and a Pod bound to it (spec.nodeName), read both back
#      (the ServiceAccount admission plugin gave the pod serviceAccountName
#      `default`);
#   2. request a ServiceAccount token bound to the pod (TokenRequest API);
#      merge-patch pods/status (phase Running, Ready condition) and read it back;
#   3. in kube-node-lease (created if missing): create a coordination.k8s.io/v1
#      Lease named after the node and renew it with an update;
#   4. with the node token (system:node:$KK_NODE_NAME): create and renew its
#      own Lease, and be refused (403) another node's Lease (Node authorizer +
#      NodeRestriction);
#   5. delete the pod with grace 0: a wrong UID precondition is refused (409),
#      the right one deletes it and the pod is gone (404);
#   6. delete what it created;
#   7. the kubelet API: the API server's kubelet client certificate chains to
#      KK_CLIENT_CA_FILE with CN kube-apiserver-kubelet-client, a
#      SubjectAccessReview allows that user nodes/proxy and refuses it to a
#      user without RBAC, and `$KK_KUBECTL get nodes` answers.
# Each step is checked; on failure it prints what was wrong, with the API
# server's answer, and exits 1. Needs curl, jq and openssl.
#
# Environment variables:
#   KK_WORK   work dir (default /tmp/kubeletkit-e2e); the control plane's env
#             file is $KK_WORK/controlplane/env
set -euo pipefail
HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "${HACK_DIR}/lib.sh"

for b in curl jq openssl; do
  command -v "${b}" >/dev/null 2>&1 || kk_die "${b} not found"
done
[[ -f "${KK_CP_ENV}" ]] || kk_die "${KK_CP_ENV} missing: run hack/controlplane-start.sh"
# shellcheck disable=SC1090 # generated file
source "${KK_CP_ENV}"

SUFFIX="$(date +%s)-$$"
NODE="kk-smoke-${SUFFIX}"
NS=default
POD="smoke-${SUFFIX}"
OUT="$(mktemp -d)"
STEP=""
trap 'rm -rf "${OUT}"' EXIT

fail() {
  kk_log "SMOKE FAILED at step '${STEP}': $*"
  if [[ -s "${OUT}/body" ]]; then
    kk_log "last response (HTTP ${CODE:-?}): $(head -c 2000 "${OUT}/body")"
  fi
  cleanup
  exit 1
}

step() {
  STEP="$*"
  kk_log "smoke: ${STEP}"
}

# api TOKEN METHOD PATH [BODY [CONTENT-TYPE]]: call the API server; sets CODE
# and leaves the response in $OUT/body.
api() {
  local token="$1" method="$2" path="$3" body="${4:-}" ctype="${5:-application/json}"
  local args=(--noproxy '*' -sS --max-time 20 --cacert "${KK_APISERVER_CA}"
    -H "Authorization: Bearer ${token}" -H 'Accept: application/json'
    -o "${OUT}/body" -w '%{http_code}' -X "${method}")
  [[ -z "${body}" ]] || args+=(-H "Content-Type: ${ctype}" --data-binary "${body}")
  CODE="$(curl "${args[@]}" "${KK_APISERVER_URL}${path}")" || CODE=000
}

# admin METHOD PATH [BODY [CONTENT-TYPE]]: api with the admin token.
admin() { api "${KK_APISERVER_TOKEN}" "$@"; }

# expect CODE...: fail unless the last call answered one of CODEs.
expect() {
  local c
  for c in "$@"; do [[ "${CODE}" == "${c}" ]] && return 0; done
  fail "HTTP ${CODE}, want $*"
}

# field JQ: the value of JQ in the last response.
field() { jq -r "$1" <"${OUT}/body"; }

# check JQ WANT: fail unless JQ in the last response is WANT.
check() {
  local got
  got="$(field "$1")"
  [[ "${got}" == "$2" ]] || fail "$1 is '${got}', want '$2'"
}

now_micro() { date -u +%Y-%m-%dT%H:%M:%S.%6NZ; }

cleanup() {
  # Best effort: remove what this run created (the body of a failed call is
  # kept for the message above).
  local saved
  saved="$(cat "${OUT}/body" 2>/dev/null || true)"
  admin DELETE "/api/v1/namespaces/${NS}/pods/${POD}?gracePeriodSeconds=0" || true
  admin DELETE "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${NODE}" || true
  admin DELETE "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${KK_NODE_NAME}" || true
  admin DELETE "/api/v1/nodes/${NODE}" || true
  printf '%s' "${saved}" >"${OUT}/body"
}

main() {
  local t0 uid lease_rv renew
  t0="$(date +%s%N)"

  step "API server ready and the admin token works"
  admin GET /readyz
  expect 200
  admin GET /apis/authorization.k8s.io/v1 && expect 200

  step "create Node ${NODE}"
  admin POST /api/v1/nodes "$(jq -nc --arg n "${NODE}" '{apiVersion:"v1",kind:"Node",
    metadata:{name:$n,labels:{"kubernetes.io/hostname":$n,"kubernetes.io/os":"linux","kubernetes.io/arch":"amd64"}}}')"
  expect 201
  check .metadata.name "${NODE}"

  step "create Pod ${NS}/${POD} bound to ${NODE}"
  admin POST "/api/v1/namespaces/${NS}/pods" "$(jq -nc --arg p "${POD}" --arg n "${NODE}" '{apiVersion:"v1",kind:"Pod",
    metadata:{name:$p},
    spec:{nodeName:$n,restartPolicy:"Never",
      containers:[{name:"c",image:"docker.io/local/busybox:1",command:["sleep","3600"]}]}}')"
  expect 201
  uid="$(field .metadata.uid)"
  [[ -n "${uid}" && "${uid}" != null ]] || fail "created pod has no uid"

  step "read Node and Pod back"
  admin GET "/api/v1/nodes/${NODE}"
  expect 200
  check '.metadata.labels["kubernetes.io/hostname"]' "${NODE}"
  admin GET "/api/v1/namespaces/${NS}/pods/${POD}"
  expect 200
  check .spec.nodeName "${NODE}"
  check .metadata.uid "${uid}"
  check .status.phase Pending
  if [[ "$(admin_sa_admission)" == on ]]; then
    check .spec.serviceAccountName default
  fi

  step "TokenRequest for ServiceAccount ${NS}/default bound to the pod"
  admin POST "/api/v1/namespaces/${NS}/serviceaccounts/default/token" "$(jq -nc --arg p "${POD}" --arg u "${uid}" '{
    apiVersion:"authentication.k8s.io/v1",kind:"TokenRequest",
    spec:{audiences:["https://kubernetes.default.svc.cluster.local"],expirationSeconds:3600,
      boundObjectRef:{apiVersion:"v1",kind:"Pod",name:$p,uid:$u}}}')"
  expect 201
  [[ "$(field .status.token)" == ey* ]] || fail "TokenRequest returned no JWT"

  step "merge-patch pods/status (phase Running, Ready=True)"
  admin PATCH "/api/v1/namespaces/${NS}/pods/${POD}/status" "$(jq -nc --arg t "$(date -u +%Y-%m-%dT%H:%M:%SZ)" '{status:{
    phase:"Running",hostIP:"127.0.0.1",podIP:"10.88.77.2",startTime:$t,
    conditions:[{type:"Ready",status:"True",lastTransitionTime:$t},{type:"ContainersReady",status:"True",lastTransitionTime:$t}],
    containerStatuses:[{name:"c",image:"docker.io/local/busybox:1",imageID:"",ready:true,restartCount:0,started:true,
      state:{running:{startedAt:$t}}}]}}')" application/merge-patch+json
  expect 200
  check .status.phase Running
  admin GET "/api/v1/namespaces/${NS}/pods/${POD}"
  expect 200
  check .status.phase Running
  check '.status.conditions[] | select(.type=="Ready") | .status' True
  check '.status.containerStatuses[0].state.running != null' true
  check .spec.nodeName "${NODE}"

  step "namespace kube-node-lease exists (created if missing)"
  admin GET /api/v1/namespaces/kube-node-lease
  if [[ "${CODE}" == 404 ]]; then
    admin POST /api/v1/namespaces '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"kube-node-lease"}}'
    expect 201 409
  else
    expect 200
  fi

  step "create Lease kube-node-lease/${NODE}"
  admin POST /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases "$(jq -nc --arg n "${NODE}" --arg t "$(now_micro)" '{
    apiVersion:"coordination.k8s.io/v1",kind:"Lease",metadata:{name:$n},
    spec:{holderIdentity:$n,leaseDurationSeconds:40,renewTime:$t}}')"
  expect 201
  check .spec.leaseDurationSeconds 40
  lease_rv="$(field .metadata.resourceVersion)"

  step "renew Lease kube-node-lease/${NODE} (update with its resourceVersion)"
  renew="$(now_micro)"
  admin PUT "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${NODE}" \
    "$(jq -c --arg t "${renew}" '.spec.renewTime=$t' <"${OUT}/body")"
  expect 200
  check .spec.renewTime "${renew}"
  [[ "$(field .metadata.resourceVersion)" != "${lease_rv}" ]] || fail "lease resourceVersion did not change"
  step "renew with a stale resourceVersion is a conflict"
  admin PUT "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${NODE}" \
    "$(jq -c --arg rv "${lease_rv}" --arg t "$(now_micro)" '.metadata.resourceVersion=$rv | .spec.renewTime=$t' <"${OUT}/body")"
  expect 409

  step "node token (system:node:${KK_NODE_NAME}) creates and renews its own Lease"
  api "${KK_NODE_TOKEN}" POST /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases "$(jq -nc --arg n "${KK_NODE_NAME}" --arg t "$(now_micro)" '{
    apiVersion:"coordination.k8s.io/v1",kind:"Lease",metadata:{name:$n},
    spec:{holderIdentity:$n,leaseDurationSeconds:40,renewTime:$t}}')"
  expect 201
  api "${KK_NODE_TOKEN}" PUT "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${KK_NODE_NAME}" \
    "$(jq -c --arg t "$(now_micro)" '.spec.renewTime=$t' <"${OUT}/body")"
  expect 200
  step "node token is refused another node's Lease"
  api "${KK_NODE_TOKEN}" POST /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases "$(jq -nc --arg n "${NODE}-other" --arg t "$(now_micro)" '{
    apiVersion:"coordination.k8s.io/v1",kind:"Lease",metadata:{name:$n},
    spec:{holderIdentity:$n,leaseDurationSeconds:40,renewTime:$t}}')"
  expect 403

  step "delete the pod with a wrong UID precondition is refused"
  admin DELETE "/api/v1/namespaces/${NS}/pods/${POD}" \
    '{"apiVersion":"v1","kind":"DeleteOptions","gracePeriodSeconds":0,"preconditions":{"uid":"00000000-0000-0000-0000-000000000000"}}'
  expect 409
  step "delete the pod with grace 0 and its UID as precondition"
  admin DELETE "/api/v1/namespaces/${NS}/pods/${POD}" \
    "$(jq -nc --arg u "${uid}" '{apiVersion:"v1",kind:"DeleteOptions",gracePeriodSeconds:0,preconditions:{uid:$u}}')"
  expect 200
  admin GET "/api/v1/namespaces/${NS}/pods/${POD}"
  expect 404

  step "clean up"
  cleanup
  admin GET "/api/v1/nodes/${NODE}"
  expect 404

  kubelet_api
  kk_log "smoke: OK in $((($(date +%s%N) - t0) / 1000000))ms"
}

# access USER: a SubjectAccessReview of USER creating nodes/proxy of
# KK_NODE_NAME; sets CODE and leaves the review in $OUT/body.
access() {
  admin POST /apis/authorization.k8s.io/v1/subjectaccessreviews "$(jq -nc --arg u "$1" --arg n "${KK_NODE_NAME}" '{
    apiVersion:"authorization.k8s.io/v1",kind:"SubjectAccessReview",
    spec:{user:$u,groups:["system:authenticated"],
      resourceAttributes:{verb:"create",version:"v1",resource:"nodes",subresource:"proxy",name:$n}}}')"
}

# kubelet_api: what kube-apiserver needs to call kubelets, and kubectl.
kubelet_api() {
  local subject
  step "the kubelet client certificate chains to KK_CLIENT_CA_FILE, CN kube-apiserver-kubelet-client"
  [[ -s "${KK_CLIENT_CA_FILE:-}" ]] || fail "KK_CLIENT_CA_FILE is not set or empty in ${KK_CP_ENV}"
  openssl verify -purpose sslclient -CAfile "${KK_CLIENT_CA_FILE}" "${KK_KUBELET_CLIENT_CERT}" >"${OUT}/body" 2>&1 ||
    fail "openssl verify failed"
  subject="$(openssl x509 -noout -subject -nameopt RFC2253 -in "${KK_KUBELET_CLIENT_CERT}")"
  [[ "${subject}" == "subject=CN=kube-apiserver-kubelet-client" ]] || fail "kubelet client certificate ${subject}"

  step "SubjectAccessReview: kube-apiserver-kubelet-client may create nodes/proxy"
  access kube-apiserver-kubelet-client
  expect 201
  check .status.allowed true
  step "SubjectAccessReview: a user without RBAC may not"
  access "kk-smoke-nobody-${SUFFIX}"
  expect 201
  check .status.allowed false

  step "kubectl get nodes"
  [[ -x "${KK_KUBECTL:-}" ]] || fail "KK_KUBECTL is not set in ${KK_CP_ENV}: run hack/controlplane-setup.sh, then start"
  "${KK_KUBECTL}" --kubeconfig "${KK_KUBECONFIG}" --request-timeout=20s get nodes >"${OUT}/body" 2>&1 ||
    fail "kubectl get nodes failed"
}

# admin_sa_admission: "on" when the running API server has the ServiceAccount
# admission plugin (hack/controlplane-start.sh without KK_SA_ADMISSION=0).
admin_sa_admission() {
  local cmd
  cmd="$(kk_cmdline "${KK_APISERVER_PID}")"
  if [[ "${cmd}" == *"--disable-admission-plugins=ServiceAccount"* ]]; then echo off; else echo on; fi
}

main "$@"

#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# hack/systemd-test.sh: the systemd cgroup driver's test against a real
# systemd. Starts a private one (hack/systemd-start.sh), runs
# go test -tags systemd -run TestSystemdMachine ./cgroups/ inside its PID
# and mount namespaces (nsenter), where the test reaches it on
# /run/systemd/private and reads its cgroups under /sys/fs/cgroup, then
# stops it (hack/systemd-stop.sh), also when the test fails. Extra
# arguments go to go test. About 20 seconds with a warm build cache.
#
# Environment variables:
#   KK_WORK   work dir (default /tmp/kubeletkit-e2e)
set -euo pipefail
HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "${HACK_DIR}/lib.sh"

REPO="$(cd "${HACK_DIR}/.." && pwd)"
trap 'bash "${HACK_DIR}/systemd-stop.sh"' EXIT
bash "${HACK_DIR}/systemd-start.sh"
# shellcheck disable=SC1091
source "${KK_WORK}/systemd/env"
nsenter -t "${KK_SYSTEMD_PID}" -m -p --wd="${REPO}" -- \
  go test -tags systemd -race -count=1 -v -run '^TestSystemdMachine$' ./cgroups/ "$@"

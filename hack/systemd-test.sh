#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# hack/systemd-test.sh: the systemd cgroup driver's test against a real
# systemd, twice: with the machine's v1 (hybrid) hierarchies, then with
# systemd on the unified (v2) hierarchy alone (KK_SYSTEMD_CGROUPS=unified).
# Each time it starts a private systemd (hack/systemd-start.sh), runs
# go test -tags systemd: TestSystemdMachine (./cgroups/: the driver),
# TestSystemdDriverAgent (./agent/: an agent with CgroupDriver systemd on
# its embedded fake runtime) and TestSystemdWatchdog (./watchdog/: two
# transient services with WatchdogSec=2s, one fed, one killed by systemd's
# watchdog), one package at a time, inside its PID and
# mount namespaces (nsenter), where the tests reach it on
# /run/systemd/private and read its cgroups under /sys/fs/cgroup, then
# stops it (hack/systemd-stop.sh), also when a test fails. On a hybrid
# machine the v2 hierarchy has no controllers (the kernel gives them to
# v1): the second run checks the units and their v2 properties as systemd
# takes them, not the limits in files. Extra arguments go to go test.
# About 50 seconds with a warm build cache.
#
# Environment variables:
#   KK_WORK   work dir (default /tmp/kubeletkit-e2e)
set -euo pipefail
HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "${HACK_DIR}/lib.sh"

REPO="$(cd "${HACK_DIR}/.." && pwd)"
trap 'bash "${HACK_DIR}/systemd-stop.sh"' EXIT
for mode in hybrid unified; do
  kk_log "systemd on the ${mode} cgroup hierarchies"
  KK_SYSTEMD_CGROUPS="${mode}" bash "${HACK_DIR}/systemd-start.sh"
  # shellcheck disable=SC1091
  source "${KK_WORK}/systemd/env"
  nsenter -t "${KK_SYSTEMD_PID}" -m -p --wd="${REPO}" -- \
    go test -tags systemd -race -count=1 -p 1 -v -run '^(TestSystemdMachine|TestSystemdDriverAgent|TestSystemdWatchdog)$' ./cgroups/ ./agent/ ./watchdog/ "$@"
  bash "${HACK_DIR}/systemd-stop.sh"
done

#!/usr/bin/env bash
# hack/oci-image.sh: write a single-platform (linux/amd64) OCI image archive
# (an OCI image layout in a tar, importable with `ctr images import`) from
# one or more root-filesystem directories, without any registry or image
# builder. Used by hack/containerd-setup.sh.
#
# Usage: oci-image.sh OUT.tar REFERENCE CONFIG_JSON LAYER_DIR [LAYER_DIR...]
#   OUT.tar      archive to write (written atomically)
#   REFERENCE    full image name, e.g. docker.io/local/busybox:1; stored as the
#                org.opencontainers.image.ref.name annotation of the manifest
#   CONFIG_JSON  the image's "config" object, e.g. '{"Cmd":["sh"],"Env":[...]}'
#   LAYER_DIR    directory whose contents become one layer (in order)
#
# The output is deterministic for identical inputs: entries are sorted, owned
# by 0:0, mtimes are the epoch and gzip stores no name/time, so digests are
# stable across runs. Needs only bash, GNU tar, gzip, sha256sum and stat.
# Environment: none.
set -euo pipefail

if [[ $# -lt 4 ]]; then
  echo "usage: $0 OUT.tar REFERENCE CONFIG_JSON LAYER_DIR [LAYER_DIR...]" >&2
  exit 2
fi
out="$1" ref="$2" config="$3"
shift 3

tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT
mkdir -p "${tmp}/layout/blobs/sha256"
blobs="${tmp}/layout/blobs/sha256"

sha() { sha256sum "$1" | cut -d' ' -f1; }
size() { stat -c %s "$1"; }
# put FILE: move FILE into the blob store, print "sha256:HEX SIZE".
put() {
  local h s
  h="$(sha "$1")" s="$(size "$1")"
  mv "$1" "${blobs}/${h}"
  printf 'sha256:%s %s\n' "${h}" "${s}"
}
tar_dir() {
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
    --format=gnu -C "$1" -cf - .
}

layers_json="" diff_ids_json="" history_json=""
for dir in "$@"; do
  [[ -d "${dir}" ]] || { echo "not a directory: ${dir}" >&2; exit 1; }
  tar_dir "${dir}" >"${tmp}/layer.tar"
  diff_id="sha256:$(sha "${tmp}/layer.tar")"
  gzip -n -9 <"${tmp}/layer.tar" >"${tmp}/layer.tar.gz"
  rm -f "${tmp}/layer.tar"
  read -r digest lsize < <(put "${tmp}/layer.tar.gz")
  layers_json+="${layers_json:+,}{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"${digest}\",\"size\":${lsize}}"
  diff_ids_json+="${diff_ids_json:+,}\"${diff_id}\""
  history_json+="${history_json:+,}{\"created\":\"1970-01-01T00:00:00Z\",\"created_by\":\"kubeletkit hack/oci-image.sh $(basename "${dir}")\"}"
done

printf '{"architecture":"amd64","os":"linux","created":"1970-01-01T00:00:00Z","config":%s,"rootfs":{"type":"layers","diff_ids":[%s]},"history":[%s]}' \
  "${config}" "${diff_ids_json}" "${history_json}" >"${tmp}/config.json"
read -r cdigest csize < <(put "${tmp}/config.json")

printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"%s","size":%s},"layers":[%s]}' \
  "${cdigest}" "${csize}" "${layers_json}" >"${tmp}/manifest.json"
read -r mdigest msize < <(put "${tmp}/manifest.json")

printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"%s","size":%s,"platform":{"architecture":"amd64","os":"linux"},"annotations":{"org.opencontainers.image.ref.name":"%s"}}]}' \
  "${mdigest}" "${msize}" "${ref}" >"${tmp}/layout/index.json"
printf '{"imageLayoutVersion":"1.0.0"}' >"${tmp}/layout/oci-layout"

mkdir -p "$(dirname "${out}")"
tar_dir "${tmp}/layout" >"${out}.partial"
mv -f "${out}.partial" "${out}"
echo "${mdigest}"

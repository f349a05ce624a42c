#!/usr/bin/env bash
# Writes an OCI image archive (for `ctr images import`) whose root filesystem is busybox-static:
# the tests cannot pull images, so they build the one they run, and use it as the pod sandbox
# ("pause") image too. Usage: busybox_oci_image.sh <out.tar> <image name>
set -euo pipefail
out=$1
name=$2
busybox=$(command -v busybox)
[[ -n $busybox ]] || { echo "busybox not found (Debian: busybox-static)" >&2; exit 1; }
file -L "$busybox" 2>/dev/null | grep -q 'statically linked' ||
  ldd "$busybox" 2>&1 | grep -q 'not a dynamic' ||
  { echo "$busybox is not statically linked (Debian: busybox-static)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/rootfs/bin" "$work/rootfs/tmp" "$work/layout/blobs/sha256"
cp "$busybox" "$work/rootfs/bin/busybox"
for tool in sh sleep cat; do ln -s busybox "$work/rootfs/bin/$tool"; done
tar -C "$work/rootfs" --numeric-owner --owner=0 --group=0 --mtime=@0 --sort=name -cf "$work/layer.tar" .

blob() {  # stores stdin as a blob; prints "<digest> <size>"
  local tmp="$work/blob.tmp" digest
  cat >"$tmp"
  digest=$(sha256sum "$tmp" | cut -d' ' -f1)
  mv "$tmp" "$work/layout/blobs/sha256/$digest"
  echo "$digest $(stat -c %s "$work/layout/blobs/sha256/$digest")"
}

read -r layer_digest layer_size < <(blob <"$work/layer.tar")
read -r config_digest config_size < <(printf '%s' '{"architecture":"amd64","os":"linux",'\
'"config":{"Cmd":["/bin/sleep","86400"],"Env":["PATH=/bin"]},'\
'"rootfs":{"type":"layers","diff_ids":["sha256:'"$layer_digest"'"]}}' | blob)
read -r manifest_digest manifest_size < <(printf '%s' '{"schemaVersion":2,'\
'"mediaType":"application/vnd.oci.image.manifest.v1+json",'\
'"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:'"$config_digest"'","size":'"$config_size"'},'\
'"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:'"$layer_digest"'","size":'"$layer_size"'}]}' | blob)
printf '%s' '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json",'\
'"digest":"sha256:'"$manifest_digest"'","size":'"$manifest_size"','\
'"platform":{"architecture":"amd64","os":"linux"},'\
'"annotations":{"io.containerd.image.name":"'"$name"'","org.opencontainers.image.ref.name":"'"${name##*:}"'"}}]}' \
  >"$work/layout/index.json"
echo '{"imageLayoutVersion":"1.0.0"}' >"$work/layout/oci-layout"
tar -C "$work/layout" -cf "$out" oci-layout index.json blobs

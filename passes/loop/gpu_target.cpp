// The GPU target the passes assume, and the roofline of a device (see gpu_passes.h).
#include <algorithm>

#include "passes/loop/gpu_passes.h"

namespace tessel::passes {

GpuTarget GpuTarget::sm80() { return GpuTarget{}; }

GpuRoofline gpu_roofline(int sm, int sm_count, int64_t sm_clock_khz, int64_t mem_clock_khz,
                         int64_t bus_width_bits) {
  // Dense fp16 FMA per clock per SM through the tensor cores: 1024 on sm_80 (A100 whitepaper:
  // 312 TFLOP/s = 108 SMs x 1.41 GHz x 2 x 1024), 256 with fp32 accumulation on sm_86/sm_89
  // (GA102/AD102), 2048 on sm_90 (H100 whitepaper: 989 TFLOP/s = 132 SMs x 1.83 GHz x 2 x 2048;
  // that rate needs wgmma, which sm_80 PTX cannot use: mma.sync reaches a fraction of it).
  const double tc_fma = sm >= 90 ? 2048 : (sm == 80 ? 1024 : 256);
  const double fp32_fma = sm == 80 ? 64 : 128;
  const double hz = static_cast<double>(sm_clock_khz) * 1e3;
  GpuRoofline r;
  r.fp16_tensor_flops = 2 * tc_fma * sm_count * hz;
  r.fp32_flops = 2 * fp32_fma * sm_count * hz;
  r.dram_bytes_per_second =
      2.0 * static_cast<double>(mem_clock_khz) * 1e3 * static_cast<double>(bus_width_bits) / 8;
  return r;
}

double GpuRoofline::launch_seconds(double flops, double bytes, bool tensor_cores) const {
  const double peak = tensor_cores ? fp16_tensor_flops : fp32_flops;
  if (peak <= 0 || dram_bytes_per_second <= 0) return 0;
  return std::max(flops / peak, bytes / dram_bytes_per_second);
}

int64_t gpu_block_threads(const loop::Stmt& kernel) {
  int64_t threads = 1;
  loop::visit_stmt(kernel, [&](const loop::Stmt& s) {
    if (s->kind == loop::StmtKind::For && s->for_kind == loop::ForKind::gpu_thread)
      threads = std::max(threads, s->extent);
  });
  return threads;
}

int64_t gpu_shared_bytes(const loop::Stmt& kernel) {
  int64_t bytes = 0;
  loop::visit_stmt(kernel, [&](const loop::Stmt& s) {
    if (s->kind == loop::StmtKind::Allocate && s->buffer->scope == loop::MemScope::shared)
      bytes += (std::max<int64_t>(s->buffer->alloc_bytes, 1) + 15) / 16 * 16;
  });
  return bytes;
}

}  // namespace tessel::passes

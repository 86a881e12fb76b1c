// HwConfig: the NPU hardware description, loaded from YAML (hw_configs/*.yaml).
//
// Loading runs parse -> validate -> derive. Every key is required unless docs/hw_config.md says
// otherwise; unknown keys are errors; every error names the file, line and dotted key and what was
// expected. Units are part of the key names (_bytes, _cycles, _bytes_per_cycle, _ghz). Nothing
// about the hardware is compiled into tessel: the compiler, the analytical model and the simulator
// all read this struct.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include <vector>
#include "isa/isa.h"

namespace tessel::npu {

/// Cube (matrix) unit: one m x k x n fractal multiply-accumulate per cycle once the pipeline is
/// full. L0A holds A fractals (m x k), L0B holds B fractals (k x n), L0C accumulates C fractals (m
/// x n).
/// A cube fractal: one m x k x n multiply-accumulate block per cycle.
struct CubeFractal {
  int m = 0, k = 0, n = 0;  // elements
  bool operator==(const CubeFractal&) const = default;
};

/// Which model executes the cube pipe's int8 mmads (core.cube.model; docs/rtl.md): the
/// transaction-level one (tlm: isa/semantics at the start cycle, timing npu::instruction_cost) or
/// the verilated SystemVerilog cube (rtl: simulator/rtl/cube.sv, checked in lockstep against both).
enum class CubeModel { tlm, rtl };

struct CubeConfig {
  int m = 0, k = 0, n = 0;                   // fractal dimensions, elements
  isa::DType input_dtype = isa::DType::f16;  // dtype of L0A/L0B operands
  isa::DType acc_dtype = isa::DType::f32;    // dtype of L0C accumulators
  int pipeline_latency_cycles = 0;           // cycles from issue of the last fractal to the result
  /// core.cube.int8 (optional): the fractal of the int8 mode (i8/u8 operands, int32
  /// accumulators; docs/isa.md, "mmad"), e.g. DaVinci's 16 x 32 x 16 (8,192 int8 MACs per cycle
  /// beside 4,096 fp16). All 0 when absent: the int8 mode then uses the float fractal m, k, n.
  CubeFractal int8;
  CubeModel model = CubeModel::tlm;  // core.cube.model (optional, default tlm)
  /// core.cube.rtl_sample (optional, model rtl only): the RTL executes the first rtl_sample int8
  /// mmads of every kernel (op_index) on each core, the rest run transaction-level; 0 = all.
  int64_t rtl_sample = 0;
  /// The float mode's fractal (m, k, n).
  CubeFractal float_fractal() const { return {m, k, n}; }
  /// The int8 mode's fractal: `int8` when the config gives it, else the float fractal.
  CubeFractal int8_fractal() const { return int8.m > 0 ? int8 : float_fractal(); }
  /// The fractal of the int8 mode when `int8_mode`, else of the float mode.
  CubeFractal fractal(bool int8_mode) const { return int8_mode ? int8_fractal() : float_fractal(); }
  bool operator==(const CubeConfig&) const = default;
};

/// Vector unit: SIMD over the unified buffer (UB).
struct VectorConfig {
  int width_bytes = 0;              // bytes processed per cycle for unit-stride operands
  int pipeline_latency_cycles = 0;  // cycles added once per instruction
  bool operator==(const VectorConfig&) const = default;
};

/// One DMA/transfer engine (MTE1, MTE2, MTE3, FIX).
struct DmaEngineConfig {
  int bytes_per_cycle = 0;  // streaming bandwidth, bytes per cycle
  int latency_cycles = 0;   // fixed start-up latency per instruction, cycles
  bool operator==(const DmaEngineConfig&) const = default;
};

/// The scalar unit fetches instructions, executes scalar ones and dispatches the others to the
/// per-pipe issue queues.
struct ScalarConfig {
  int cycles_per_instruction = 0;  // issue cost of every instruction, cycles
  int issue_queue_depth = 0;       // entries per pipe queue; a full queue stalls the scalar unit
  bool operator==(const ScalarConfig&) const = default;
};

/// Scratchpad capacities, bytes.
struct BuffersConfig {
  int64_t l1 = 0, l0a = 0, l0b = 0, l0c = 0, ub = 0;
  bool operator==(const BuffersConfig&) const = default;
};

/// Per-core configuration.
struct CoreConfig {
  ScalarConfig scalar;
  CubeConfig cube;
  VectorConfig vector;
  BuffersConfig buffers_bytes;
  DmaEngineConfig mte1, mte2, mte3, fix;
  int sync_event_ids = 0;  // event ids per (src pipe, dst pipe) pair for set_flag / wait_flag
  bool operator==(const CoreConfig&) const = default;
};

/// Which DRAM timing model the simulator uses (memory.dram.model).
enum class DramModel { simple, banked };
/// Row-buffer policy of the banked model: keep the row open after an access (open-page) or
/// precharge it right after (closed-page, auto-precharge).
enum class PagePolicy { open_page, closed_page };

/// DRAM device timings of the banked model, in DRAM clock cycles (nCK, tCK = tCK_ps), as a JEDEC
/// standard or datasheet states them for one speed bin (hw_configs/dram/*.yaml cite theirs).
/// docs/memory.md describes every constraint and how nCK converts to NPU cycles.
struct DramTimingConfig {
  int tCK_ps = 0;  // DRAM command clock period, picoseconds
  int tRCD = 0;    // ACT -> RD/WR, same bank
  int tRP = 0;     // PRE -> ACT, same bank
  int tCL = 0;     // RD -> first data beat (read latency, RL)
  int tCWL = 0;    // WR -> first write data beat (write latency, WL)
  int tRAS = 0;    // ACT -> PRE, same bank
  int tRRD_S = 0;  // ACT -> ACT, different bank groups, same rank
  int tRRD_L = 0;  // ACT -> ACT, same bank group
  int tFAW = 0;    // window holding at most four ACTs per rank
  int tCCD_S = 0;  // RD -> RD (WR -> WR), different bank groups
  int tCCD_L = 0;  // RD -> RD (WR -> WR), same bank group
  int tRTP = 0;    // RD -> PRE, same bank
  int tWR = 0;     // last write data beat -> PRE, same bank (write recovery)
  int tWTR = 0;    // last write data beat -> RD, same rank
  int tREFI = 0;   // average interval between all-bank refreshes of a rank
  int tRFC = 0;    // all-bank refresh -> next ACT of that rank
  bool operator==(const DramTimingConfig&) const = default;
};

/// The banked DRAM model (memory.dram.banked): geometry, address mapping, policy and timings.
/// Request size = one burst = bus_width_bits / 8 * burst_length bytes (must equal
/// memory.dram.burst_bytes). Simulated in simulator/dram_banked.h.
struct DramBankedConfig {
  std::string name;          // e.g. "LPDDR5-6400 x16, 8 channels"
  int channels = 0;          // independent channels (power of two)
  int ranks = 0;             // ranks per channel (power of two)
  int bank_groups = 0;       // bank groups per rank (power of two; 1 = no bank groups)
  int banks_per_group = 0;   // banks per bank group (power of two)
  int64_t rows = 0;          // rows per bank (power of two)
  int row_bytes = 0;         // row (page) size per channel, bytes (power of two)
  int bus_width_bits = 0;    // data bus width of one channel (DQ pins)
  int burst_length = 0;      // beats per column access (BL)
  int transfers_per_ck = 0;  // data beats per tCK (DDR: 2; LPDDR5 WCK:CK 4:1 DDR: 8)
  int queue_depth = 0;       // FR-FCFS window: pending requests per channel considered
  /// Address bit fields from the most to the least significant bit above the burst offset, e.g.
  /// "row rank bank bank_group column channel"; a field may be split ("column:2" takes 2 bits).
  std::string address_mapping;
  /// XOR the channel index with the address bits above the channel field, folded log2(channels)
  /// bits at a time (channel_hash: xor), so power-of-two strides spread over the channels as in
  /// hashed controllers; none = the plain bit slice.
  bool channel_xor = false;
  PagePolicy page_policy = PagePolicy::open_page;
  DramTimingConfig timing;
  bool operator==(const DramBankedConfig&) const = default;
};

/// Off-chip memory shared by all cores (one arbitrated channel).
struct DramConfig {
  int bytes_per_cycle = 0;  // peak bandwidth shared by all cores, bytes per cycle
  int latency_cycles = 0;   // access latency added to every transfer, cycles
  int64_t capacity_bytes = 0;
  /// Access granularity: the channel moves whole aligned blocks of burst_bytes (a power of two;
  /// e.g. 32 for an LPDDR5 x16 channel with BL16 or an HBM2 pseudo-channel). 1 = byte-granular.
  /// Optional in YAML (default 1). Timing: docs/isa.md, "DRAM" bullet.
  int burst_bytes = 1;
  /// simple: one channel of bytes_per_cycle arbitrated by next-free-time (docs/isa.md, "DRAM");
  /// banked: `banked` below (optional in YAML, default simple).
  DramModel model = DramModel::simple;
  DramBankedConfig banked;  // set only when model == banked
  bool operator==(const DramConfig&) const = default;
};

/// L2 write policy: write_back keeps written lines dirty in L2 (DRAM sees them when evicted);
/// write_through forwards every write to DRAM (and updates a resident line).
enum class L2WritePolicy : uint8_t { write_back, write_through };

/// What the compiler places into the L2 with hints (memory.l2.placement; docs/isa.md, l2_prefetch
/// and l2_discard): none; prefetch: at a kernel's start, the constant GM tensors (weights) of the
/// next kernels are prefetched into L2 (passes/loop/l2_prefetch.cpp); discard: after the last
/// reader of an intermediate GM tensor its lines are dropped without write-back
/// (passes/loop/l2_discard.cpp); prefetch_discard: both.
enum class L2Placement : uint8_t { none, prefetch, discard, prefetch_discard };

/// Optional shared L2 between the cores' DMA engines and DRAM (Ascend's L2, a TPU's CMEM): a
/// set-associative, LRU, hardware-managed cache of GM lines that every GM dma passes through.
/// `memory.l2` in YAML; absent (capacity_bytes == 0) means no L2: the DMA engines reach DRAM
/// directly. Timing: docs/isa.md, Timing, "L2". Keys: docs/hw_config.md.
struct L2Config {
  int64_t capacity_bytes = 0;  // total data capacity, bytes; 0 = no L2
  int line_bytes = 128;        // line (allocation and fill) size, power of two
  int ways = 16;               // associativity; sets = capacity / (line_bytes * ways)
  int banks = 16;              // lines interleave over banks by line index (line % banks)
  int bytes_per_cycle = 64;    // per bank: the bank streams this many bytes per cycle
  int latency_cycles = 40;     // added to the completion of every request (hit or miss)
  L2WritePolicy write_policy = L2WritePolicy::write_back;
  L2Placement placement = L2Placement::none;  // compiler hints (optional key, default none)
  bool enabled() const { return capacity_bytes > 0; }
  int64_t sets() const { return enabled() ? capacity_bytes / (int64_t{line_bytes} * ways) : 0; }
  /// The placement asks for l2_prefetch hints (prefetch or prefetch_discard) on an L2.
  bool prefetches() const {
    return enabled() &&
           (placement == L2Placement::prefetch || placement == L2Placement::prefetch_discard);
  }
  /// The placement asks for l2_discard hints (discard or prefetch_discard) on an L2.
  bool discards() const {
    return enabled() &&
           (placement == L2Placement::discard || placement == L2Placement::prefetch_discard);
  }
  bool operator==(const L2Config&) const = default;
};

/// Values computed from the loaded fields (the "derive" step).
struct DerivedConfig {
  int64_t cube_macs_per_cycle = 0;      // m * k * n per core
  double peak_tflops = 0;               // 2 * macs * cores * clock
  int vector_fp16_elems_per_cycle = 0;  // width_bytes / 2
  int vector_fp32_elems_per_cycle = 0;  // width_bytes / 4
  double dram_gb_per_s = 0;             // bytes_per_cycle * clock_ghz
  // Added with the loader (additive):
  int64_t a_fractal_bytes = 0;           // m * k * dtype_bytes(input_dtype): one L0A fractal
  int64_t b_fractal_bytes = 0;           // k * n * dtype_bytes(input_dtype): one L0B fractal
  int64_t c_fractal_bytes = 0;           // m * n * dtype_bytes(acc_dtype): one L0C fractal
  int64_t chip_flops_per_cycle = 0;      // 2 * cube_macs_per_cycle * cores
  int64_t cube_int8_macs_per_cycle = 0;  // int8 mode: int8_fractal m * k * n per core
  int64_t chip_int8_ops_per_cycle = 0;   // 2 * cube_int8_macs_per_cycle * cores
  double peak_int8_tops = 0;             // chip_int8_ops_per_cycle * clock (1e12 ops/s)
  double ridge_flops_per_dram_byte = 0;  // roofline ridge: chip_flops_per_cycle / dram bytes/cycle
  bool operator==(const DerivedConfig&) const = default;
};

/// A complete, validated NPU description.
struct HwConfig {
  std::string name;
  std::string source_file;  // where it was loaded from ("" when built in code)
  double clock_ghz = 0;
  int cores = 0;
  CoreConfig core;
  DramConfig dram;
  /// The technology table of the area and energy model (npu_model/area_energy.h): the `tech`
  /// key, optional. Empty when absent: the built-in hw_configs/tech/45nm.yaml. A relative path in
  /// a file is relative to that file's directory, in --hw-set tech=PATH to the working
  /// directory; the loader checks the table and stores the path made absolute.
  std::string tech;
  L2Config l2;  // optional (memory.l2); l2.enabled() false when the config has none
  /// memory.multicast (optional, default none): dma_mc, a GM load delivered to a set of cores
  /// (docs/isa.md), exists on this NPU; the tilers then multicast operands the cores share.
  bool multicast = false;
  DerivedConfig derived;
  bool operator==(const HwConfig&) const = default;
};

/// One `--hw-set KEY=VALUE` override: `key` is a dotted path (e.g. "core.buffers_bytes.ub").
struct HwOverride {
  std::string key;
  std::string value;
};

/// Loads, validates and derives a config from a YAML file, applying `overrides` to the parsed tree
/// before validation (so an override is checked exactly like the file).
/// Throws tessel::Error naming the file, line and key on: unreadable file, YAML syntax error,
/// unknown or missing key, wrong type, value out of range, an override whose key does not exist.
HwConfig load_hw_config(const std::string& path, const std::vector<HwOverride>& overrides = {});

/// Same as load_hw_config but from YAML text; `source_name` is used in error messages.
HwConfig parse_hw_config(const std::string& yaml_text, const std::string& source_name,
                         const std::vector<HwOverride>& overrides = {});

/// Parses "key=value" into an HwOverride; throws tessel::Error if there is no '='.
/// The text is split at the first '='; spaces around key and value are dropped. Also throws on an
/// empty key or value and on a key that is not dot-separated names ("core..ub"). Whether the key
/// exists is checked when the override is applied (load_hw_config / parse_hw_config).
HwOverride parse_hw_override(const std::string& text);

/// Every key a config file must give (and `--hw-set` accepts), dotted, in the schema's order.
std::vector<std::string> hw_config_keys();

/// Serialises the loaded fields of `hw` (not `derived`, not `source_file`) as YAML in the schema's
/// key order; parse_hw_config of the result gives back an equal config. Used to record the
/// effective configuration (after --hw-set) next to results.
std::string hw_config_to_yaml(const HwConfig& hw);

/// Validates a config built in code with exactly the checks a loaded file gets (ranges, minimum
/// tiles) and fills hw.derived. Throws tessel::Error naming the offending dotted key (the line
/// numbers in that message refer to hw_config_to_yaml(hw)).
void finalize_hw_config(HwConfig& hw);

}  // namespace tessel::npu

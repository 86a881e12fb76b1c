// Area and energy of an NPU run: a per-component model over the hardware config (HwConfig), a
// technology table (hw_configs/tech/*.yaml) and what the simulation counted (sim::SimResult).
//
// Components (docs/area_energy.md gives every equation and the table's sources):
//  - cube: m*k*n MAC units of the config's input dtype (multiplier) and accumulator dtype (adder);
//    energy = MACs executed (padded fractals included) x (mult_pj[input] + add_pj[acc]).
//  - vector: width_bytes/4 fp32 lanes (an adder and a multiplier each); energy = element
//    operations by dtype and class (add-like, multiply-like, multiply-add) x their pJ.
//  - scalar: a 32 x 64-bit register file, an int64 adder and multiplier; energy = instructions
//    fetched x scalar.instruction_pj.
//  - each scratchpad (l1, l0a, l0b, l0c, ub): area = bits x cell area / array efficiency x
//    (1 + extra_port_area x (ports - 1)), ports = the pipes that access it (scratchpad_ports);
//    energy = bytes read and written / (access_bits / 8) x E(capacity), E the power law fitted
//    through the table's points (fit_sram_energy).
//  - l2 (memory.l2, chip-wide; zero without one): the data array as an SRAM of capacity_bytes
//    with one port (banks, not ports, give its bandwidth) plus a tag array of l2_tag_bits per
//    line; energy = data bytes (requests, fills, write-backs, the final flush of dirty lines)
//    / (access_bits / 8) x
//    E(capacity) + line lookups x ways x tag bits / access_bits x E(tag array bytes).
//  - each DMA engine (mte1, mte2, mte3, fix): a double-buffered staging register of
//    bytes_per_cycle bytes plus 4 address generators (int32 adder + 2 x 32-bit register);
//    energy = bytes it delivered x 8 x 2 x register pj_per_bit (written into and read out of the
//    staging register).
//  - dram: interface area = GB/s x interface_area_mm2_per_gb_per_s (chip-wide); energy = (the
//    bytes of every whole DRAM burst moved + dirty L2 bytes left at the end) x 8 x
//    dram.pj_per_bit.
//  - leakage of every component: its area x leakage density (logic or SRAM) x run time, run time
//    = total_cycles / (clock_ghz x 1e9) s. Per-core components count every configured core.
// Units: area in mm2, energy in uJ (1 uJ = 1e6 pJ), time in s, EDP in uJ x s.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "isa/isa.h"
#include "npu_model/hw_config.h"
#include "npu_model/timing.h"

namespace tessel::sim {
struct SimResult;
}

namespace tessel::npu {

/// Operand types the technology table prices (its `ops` keys): fp16, fp32, int8, int16, int32,
/// int64. An isa::DType maps to the one of its class and width (bool and u8 -> int8, u16 ->
/// int16, ...): tech_type().
enum class TechType : uint8_t { fp16, fp32, int8, int16, int32, int64 };
inline constexpr int kNumTechTypes = 6;
const char* tech_type_name(TechType t);
TechType tech_type(isa::DType t);

/// Energy (pJ) and area (um2) of one adder and one multiplier of a type.
struct OpCost {
  double add_pj = 0, mult_pj = 0, add_area_um2 = 0, mult_area_um2 = 0;
  bool operator==(const OpCost&) const = default;
};

/// One measured SRAM access energy: capacity_bytes, pJ per access of TechTable::sram_access_bits.
struct SramPoint {
  double capacity_bytes = 0, access_pj = 0;
  bool operator==(const SramPoint&) const = default;
};

/// A technology node's numbers (hw_configs/tech/*.yaml; every key described in
/// docs/area_energy.md). All values are finite and >= 0, the SRAM points > 0 with distinct
/// capacities.
struct TechTable {
  std::string name;
  std::string source;       // the table's `source:` text
  std::string source_file;  // where it was loaded from ("<built-in ...>" for the default)
  std::array<OpCost, kNumTechTypes> ops{};  // indexed by TechType
  double register_pj_per_bit = 0, register_area_um2_per_bit = 0;
  double scalar_instruction_pj = 0;
  int sram_access_bits = 0;
  std::vector<SramPoint> sram_energy_points;
  double sram_cell_area_um2 = 0, sram_array_efficiency = 0, sram_extra_port_area = 0;
  double dram_pj_per_bit = 0, dram_interface_area_mm2_per_gb_per_s = 0;
  double leakage_logic_mw_per_mm2 = 0, leakage_sram_mw_per_mm2 = 0;
  /// The fitted SRAM access energy E(C) = sram_fit_pj * (C / sram_fit_reference_bytes)^
  /// sram_fit_exponent (pJ per access of sram_access_bits), set by the loader (fit_sram_energy).
  double sram_fit_pj = 0, sram_fit_reference_bytes = 0, sram_fit_exponent = 0;
};

/// Parses a technology table (YAML text; `source_name` is used in messages). Throws tessel::Error
/// naming source_name:line:column and the dotted key on: a YAML syntax error, an unknown key
/// (e.g. an unpriced type under `ops`), a missing key, a value that is not a number, a negative or
/// non-finite number, array_efficiency outside (0, 1], access_bits not a positive multiple of 8,
/// fewer than two SRAM points or two with the same capacity. All problems are reported at once.
TechTable parse_tech_table(const std::string& yaml_text, const std::string& source_name);
/// Same, from a file; throws tessel::Error naming the path when it cannot be read or is larger
/// than 1 MiB.
TechTable load_tech_table(const std::string& path);
/// The table a config without a `tech` key uses: hw_configs/tech/45nm.yaml, compiled into tessel
/// (its source_file reads "<built-in hw_configs/tech/45nm.yaml>").
const TechTable& default_tech_table();
/// load_tech_table(path), loaded once per path for the life of the process (thread-safe; the
/// reference stays valid). The hardware config loader calls it to check a config's `tech` key.
const TechTable& cached_tech_table(const std::string& path);
/// The table `hw` selects: default_tech_table() when hw.tech is empty, else the file hw.tech
/// (made absolute when the config was loaded: HwConfig::tech), through cached_tech_table.
/// Throws tessel::Error as load_tech_table.
const TechTable& tech_table_for(const HwConfig& hw);

/// Least-squares fit of log(E) = log(a) + b log(C / C0) through `points` (C0: the first point's
/// capacity). Returns {a, C0, b}. Needs two points with distinct capacities (the loader checks).
struct SramFit {
  double a_pj = 0, reference_bytes = 0, exponent = 0;
};
SramFit fit_sram_energy(const std::vector<SramPoint>& points);
/// pJ per access of tech.sram_access_bits to an SRAM of `capacity_bytes` (the fitted power law).
double sram_access_pj(const TechTable& tech, double capacity_bytes);

/// How many ports each scratchpad has: the pipes that read or write it (docs/isa.md, pipes):
/// l1 3 (MTE2 in, MTE1 out, MTE3 in from UB), l0a 2 and l0b 2 (MTE1 in, CUBE out), l0c 2 (CUBE,
/// FIX), ub 4 (MTE2, FIX, VECTOR, MTE3). gm: 0 (off-chip, priced as DRAM).
int scratchpad_ports(isa::Scope scope);

/// Bits of one L2 tag entry: the line-address bits the set index does not give
/// (ceil(log2(ceil(dram.capacity_bytes / line_bytes / sets)))), valid and dirty, and an LRU rank
/// of ceil(log2(ways)) bits. 0 without an L2.
int l2_tag_bits(const HwConfig& hw);

/// Vector element-operation classes the model prices: add-like (add, sub, max, min, compare,
/// select, logic, copy, abs, relu, neg, dup, conversion, reductions per input element) cost
/// add_pj; multiply-like (mul, muls, div, exp, ln, sqrt, rec: one multiply each, an
/// underestimate for the iterative ones) cost mult_pj; multiply-add (vmla) costs both.
enum class VectorOpClass : uint8_t { add, mult, mac };
inline constexpr int kNumVectorOpClasses = 3;
VectorOpClass vector_op_class(isa::Opcode op);

/// What one core executed that the model prices beyond SimResult's bytes per scope. The
/// simulator fills one per core (sim::CoreStats::ops) with count_ops for every data instruction.
struct OpCounts {
  uint64_t cube_macs = 0;  // per mmad: m1*k1*n1 * m*k*n (whole fractals, padding included)
  /// Element operations by class and dtype: per vector instruction count * repeat elements
  /// (one per element of the result; a reduction: one per input element), at the dtype of
  /// VectorArgs::dtype (vconv: the wider of its source and destination).
  std::array<std::array<uint64_t, kNumTechTypes>, kNumVectorOpClasses> vector_elem_ops{};
  /// Bytes each pipe wrote to its destination scope (the sum of ScopeTraffic::written): what the
  /// DMA engines MTE1/MTE2/MTE3/FIX delivered.
  std::array<uint64_t, isa::kNumPipes> pipe_bytes_written{};
  bool operator==(const OpCounts&) const = default;
};

/// Adds one executed data instruction on `pipe` to `counts` (traffic: scope_traffic(hw, instr)).
/// Scalar and sync instructions add nothing.
void count_ops(const HwConfig& hw, isa::Pipe pipe, const isa::Instruction& instr,
               const ScopeTraffic& traffic, OpCounts& counts);

/// Everything the model reads from a run, summed over cores. activity_of() fills it from a
/// simulation; a caller without one (e.g. an analytical screening of design points) may fill it
/// from its own estimates and call estimate_area_energy().
struct Activity {
  uint64_t cycles = 0;               // total_cycles of the run
  uint64_t scalar_instructions = 0;  // instructions fetched (SimResult::instructions)
  OpCounts ops;                      // summed over cores
  std::array<uint64_t, isa::kNumScopes> bytes_read{}, bytes_written{};  // by isa::Scope
  uint64_t dram_burst_bytes = 0;  // SimResult::dram_burst_bytes
  /// L2 (sim::L2Stats): bytes read or written in its data array (the requests' bytes, line
  /// fills, write-backs) and lines looked up (each reads its set's `ways` tags).
  uint64_t l2_data_bytes = 0, l2_line_lookups = 0;
  /// Dirty L2 bytes the run left unflushed: charged as one more L2 read and DRAM write each
  /// (the results reach DRAM eventually; without it an L2 would hide the output's DRAM cost).
  uint64_t l2_dirty_bytes_at_end = 0;
};
/// The Activity of a simulated run (sums its per-core statistics).
Activity activity_of(const sim::SimResult& result);

/// One component's figures, all cores together.
struct ComponentEstimate {
  std::string name;  // cube, vector, scalar, l1, l0a, l0b, l0c, ub, l2, mte1, mte2, mte3, fix, dram
  double area_mm2 = 0;
  double dynamic_uj = 0;  // energy of what it did
  double leakage_uj = 0;  // area x leakage density x run time
  double energy_uj() const { return dynamic_uj + leakage_uj; }
};

/// The area and energy of a run on a config. EDP = energy_uj x seconds (uJ x s).
struct AreaEnergy {
  std::string tech_name, tech_file;           // the TechTable used
  std::vector<ComponentEstimate> components;  // in the order of ComponentEstimate::name above
  double area_mm2 = 0;                        // sum over components
  double dynamic_uj = 0, leakage_uj = 0;
  double energy_uj = 0;        // dynamic_uj + leakage_uj
  double seconds = 0;          // cycles / (clock_ghz x 1e9)
  double edp_uj_s = 0;         // energy_uj x seconds
  double average_power_w = 0;  // energy_uj x 1e-6 / seconds (0 for a run of 0 cycles)
};

/// The model itself: area and energy of `activity` on `hw` with `tech` (equations above).
AreaEnergy estimate_area_energy(const HwConfig& hw, const TechTable& tech,
                                const Activity& activity);

/// THE entry point for reports and design-space exploration: the area (mm2), energy (uJ),
/// per-component breakdown and EDP (uJ x s) of a simulated run `result` of a program on `hw`,
/// with the technology table hw selects (tech_table_for(hw)). Equivalent to
/// estimate_area_energy(hw, tech_table_for(hw), activity_of(result)). Area depends on hw only;
/// energy grows with every count of `result`. Throws tessel::Error if hw's tech table cannot be
/// loaded (naming the table's file, line and key).
AreaEnergy area_energy(const HwConfig& hw, const sim::SimResult& result);

}  // namespace tessel::npu

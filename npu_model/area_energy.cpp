// The area and energy model (area_energy.h) and the loader of its technology tables
// (hw_configs/tech/*.yaml). The loader walks one fixed schema over the parsed YAML and collects
// every problem (file:line:column: dotted key: what was expected) before throwing, as the
// hardware config loader does (it shares its YAML helpers, npu_model/yaml_support.h).
#include "npu_model/area_energy.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>

#include "compiler/support/error.h"
#include "compiler/support/suggest.h"
#include "npu_model/yaml_support.h"
#include "simulator/simulator.h"

namespace tessel::npu {

namespace {

namespace ys = yaml_support;

constexpr const char* kTechTypeNames[kNumTechTypes] = {"fp16",  "fp32",  "int8",
                                                       "int16", "int32", "int64"};

/// Reads one technology table: every key of the schema is required, nothing else is allowed.
class TechReader {
 public:
  explicit TechReader(std::string source) : source_(std::move(source)) {}

  TechTable run(const std::string& text) {
    YAML::Node doc;
    YAML::Mark second;
    try {
      doc = ys::load_document(text, source_, second);
    } catch (const YAML::Exception& e) {
      fail("{}: YAML syntax error: {}", ys::where(source_, e.mark), e.msg);
    }
    if (!second.is_null())
      add(second, fmt::format("{}: a technology table is one YAML document; found a second one",
                              ys::where(source_, second)));
    TechTable t;
    t.source_file = source_;
    if (!doc || !doc.IsMap()) {
      add(doc ? doc.Mark() : YAML::Mark(),
          fmt::format("{}:1:1: expected a map with keys name, source, ops, register, scalar, "
                      "sram, dram, leakage, got {}",
                      source_, doc ? ys::describe_node(doc) : "nothing"));
      throw Error(report());
    }
    const YAML::Mark root = doc.Mark();
    keys(doc, "", {"name", "source", "ops", "register", "scalar", "sram", "dram", "leakage"});
    t.name = text_value(doc, "", "name", root);
    t.source = text_value(doc, "", "source", root);
    if (const std::optional<YAML::Node> ops_ = map(doc, "", "ops", root)) {
      const YAML::Node& ops = *ops_;
      std::vector<std::string> types(std::begin(kTechTypeNames), std::end(kTechTypeNames));
      keys(ops, "ops", types);
      for (int i = 0; i < kNumTechTypes; ++i) {
        const std::string path = std::string("ops.") + kTechTypeNames[i];
        const std::optional<YAML::Node> op_ = map(ops, "ops", kTechTypeNames[i], ops.Mark());
        if (!op_) continue;
        const YAML::Node& op = *op_;
        keys(op, path, {"add_pj", "mult_pj", "add_area_um2", "mult_area_um2"});
        OpCost& c = t.ops[i];
        c.add_pj = number(op, path, "add_pj");
        c.mult_pj = number(op, path, "mult_pj");
        c.add_area_um2 = number(op, path, "add_area_um2");
        c.mult_area_um2 = number(op, path, "mult_area_um2");
      }
    }
    if (const std::optional<YAML::Node> r_ = map(doc, "", "register", root)) {
      const YAML::Node& r = *r_;
      keys(r, "register", {"pj_per_bit", "area_um2_per_bit"});
      t.register_pj_per_bit = number(r, "register", "pj_per_bit");
      t.register_area_um2_per_bit = number(r, "register", "area_um2_per_bit");
    }
    if (const std::optional<YAML::Node> s_ = map(doc, "", "scalar", root)) {
      const YAML::Node& s = *s_;
      keys(s, "scalar", {"instruction_pj"});
      t.scalar_instruction_pj = number(s, "scalar", "instruction_pj");
    }
    if (const std::optional<YAML::Node> s_ = map(doc, "", "sram", root)) {
      const YAML::Node& s = *s_;
      keys(
          s, "sram",
          {"access_bits", "energy_points", "cell_area_um2", "array_efficiency", "extra_port_area"});
      size_t before = errors_.size();
      const double bits = number(s, "sram", "access_bits");
      if (errors_.size() == before && (bits < 8 || std::fmod(bits, 8.0) != 0 || bits > 1 << 20)) {
        add(s["access_bits"].Mark(),
            fmt::format("{}: sram.access_bits: expected a positive multiple of 8 (bits per "
                        "access), got {}",
                        ys::where(source_, s["access_bits"].Mark()), bits));
      }
      t.sram_access_bits = static_cast<int>(bits);
      t.sram_energy_points = points(s, s.Mark());
      t.sram_cell_area_um2 = number(s, "sram", "cell_area_um2");
      before = errors_.size();
      t.sram_array_efficiency = number(s, "sram", "array_efficiency");
      if (errors_.size() == before &&
          (t.sram_array_efficiency == 0 || t.sram_array_efficiency > 1)) {
        add(s["array_efficiency"].Mark(),
            fmt::format("{}: sram.array_efficiency: expected a fraction in (0, 1] (cell area / "
                        "macro area), got {}",
                        ys::where(source_, s["array_efficiency"].Mark()), t.sram_array_efficiency));
      }
      t.sram_extra_port_area = number(s, "sram", "extra_port_area");
    }
    if (const std::optional<YAML::Node> d_ = map(doc, "", "dram", root)) {
      const YAML::Node& d = *d_;
      keys(d, "dram", {"pj_per_bit", "interface_area_mm2_per_gb_per_s"});
      t.dram_pj_per_bit = number(d, "dram", "pj_per_bit");
      t.dram_interface_area_mm2_per_gb_per_s = number(d, "dram", "interface_area_mm2_per_gb_per_s");
    }
    if (const std::optional<YAML::Node> l_ = map(doc, "", "leakage", root)) {
      const YAML::Node& l = *l_;
      keys(l, "leakage", {"logic_mw_per_mm2", "sram_mw_per_mm2"});
      t.leakage_logic_mw_per_mm2 = number(l, "leakage", "logic_mw_per_mm2");
      t.leakage_sram_mw_per_mm2 = number(l, "leakage", "sram_mw_per_mm2");
    }
    if (!errors_.empty()) throw Error(report());
    const SramFit fit = fit_sram_energy(t.sram_energy_points);
    t.sram_fit_pj = fit.a_pj;
    t.sram_fit_reference_bytes = fit.reference_bytes;
    t.sram_fit_exponent = fit.exponent;
    return t;
  }

 private:
  void add(const YAML::Mark& mark, std::string text) { errors_.push_back({mark, std::move(text)}); }

  /// Every problem, one per line, in file order.
  std::string report() {
    std::stable_sort(errors_.begin(), errors_.end(), [](const auto& a, const auto& b) {
      return std::pair{a.first.line, a.first.column} < std::pair{b.first.line, b.first.column};
    });
    std::string out;
    for (const auto& [mark, text] : errors_) out += (out.empty() ? "" : "\n") + text;
    return out;
  }

  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

  /// Reports the keys of map `m` (at `path`) that are not in `allowed`.
  void keys(const YAML::Node& m, const std::string& path, const std::vector<std::string>& allowed) {
    std::string list;
    for (const std::string& k : allowed) list += (list.empty() ? "" : ", ") + k;
    for (auto it = m.begin(); it != m.end(); ++it) {
      const YAML::Node key = it->first;
      const std::string name = key.IsScalar() ? key.Scalar() : ys::describe_node(key);
      if (std::find(allowed.begin(), allowed.end(), name) != allowed.end()) continue;
      add(key.Mark(),
          fmt::format("{}: {}: unknown key; expected one of {}{}", ys::where(source_, key.Mark()),
                      join(path, name), list, did_you_mean(name, allowed)));
    }
  }

  /// The child `key` of `parent` (at `path`, written at `parent_mark`); reports a missing key.
  YAML::Node child(const YAML::Node& parent, const std::string& path, const std::string& key,
                   const YAML::Mark& parent_mark, const std::string& want) {
    YAML::Node n = parent[key];
    if (!n) {
      add(parent_mark,
          fmt::format("{}: {}missing required key '{}'; expected {}",
                      ys::where(source_, parent_mark), path.empty() ? "" : path + ": ", key, want));
    }
    return n;
  }

  /// The section `key` of `parent`, or nothing (problem reported) when absent or not a map.
  std::optional<YAML::Node> map(const YAML::Node& parent, const std::string& path,
                                const std::string& key, const YAML::Mark& parent_mark) {
    YAML::Node n = child(parent, path, key, parent_mark, "a map");
    if (!n) return std::nullopt;
    if (!n.IsMap()) {
      add(n.Mark(), fmt::format("{}: {}: expected a map, got {}", ys::where(source_, n.Mark()),
                                join(path, key), ys::describe_node(n)));
      return std::nullopt;
    }
    return n;
  }

  std::string text_value(const YAML::Node& parent, const std::string& path, const std::string& key,
                         const YAML::Mark& parent_mark) {
    YAML::Node n = child(parent, path, key, parent_mark, "a non-empty string");
    if (!n) return "";
    if (!n.IsScalar() || n.Scalar().empty()) {
      add(n.Mark(),
          fmt::format("{}: {}: expected a non-empty string, got {}", ys::where(source_, n.Mark()),
                      join(path, key), ys::describe_node(n)));
      return "";
    }
    return n.Scalar();
  }

  /// A finite number >= 0 (0 when a problem was reported).
  double number(const YAML::Node& parent, const std::string& path, const std::string& key) {
    YAML::Node n = child(parent, path, key, parent.Mark(), "a number >= 0");
    return n ? number_of(n, join(path, key)) : 0.0;
  }

  double number_of(const YAML::Node& n, const std::string& full) {
    const std::string want = "a finite number >= 0";
    if (!n.IsScalar() || ys::is_quoted(n) || !ys::is_number_text(n.Scalar())) {
      add(n.Mark(), fmt::format("{}: {}: expected {}, got {}", ys::where(source_, n.Mark()), full,
                                want, ys::describe_node(n)));
      return 0;
    }
    const std::string& text = n.Scalar();
    double v = 0;
    const char* begin = text.data() + (text[0] == '+' ? 1 : 0);
    const auto [end, ec] = std::from_chars(begin, text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) {
      add(n.Mark(), fmt::format("{}: {}: expected {}, got {}, which is out of range",
                                ys::where(source_, n.Mark()), full, want, text));
      return 0;
    }
    if (v < 0) {
      add(n.Mark(), fmt::format("{}: {}: expected {}, got {}, which is negative",
                                ys::where(source_, n.Mark()), full, want, text));
      return 0;
    }
    return v;
  }

  /// sram.energy_points: a list of {capacity_bytes, access_pj}, both > 0, at least two distinct
  /// capacities.
  std::vector<SramPoint> points(const YAML::Node& sram, const YAML::Mark& mark) {
    std::vector<SramPoint> out;
    YAML::Node list =
        child(sram, "sram", "energy_points", mark, "a list of {capacity_bytes, access_pj}");
    if (!list) return out;
    if (!list.IsSequence() || list.size() < 2) {
      add(list.Mark(), fmt::format("{}: sram.energy_points: expected a list of at least two "
                                   "{{capacity_bytes, access_pj}} maps, got {}",
                                   ys::where(source_, list.Mark()),
                                   list.IsSequence() ? fmt::format("{} entries", list.size())
                                                     : ys::describe_node(list)));
      return out;
    }
    for (size_t i = 0; i < list.size(); ++i) {
      const YAML::Node p = list[i];
      const std::string path = fmt::format("sram.energy_points[{}]", i);
      if (!p.IsMap()) {
        add(p.Mark(), fmt::format("{}: {}: expected a map {{capacity_bytes, access_pj}}, got {}",
                                  ys::where(source_, p.Mark()), path, ys::describe_node(p)));
        continue;
      }
      keys(p, path, {"capacity_bytes", "access_pj"});
      SramPoint sp{number(p, path, "capacity_bytes"), number(p, path, "access_pj")};
      const bool complete = p["capacity_bytes"] && p["access_pj"];
      if (complete && (sp.capacity_bytes == 0 || sp.access_pj == 0)) {
        add(p.Mark(), fmt::format("{}: {}: capacity_bytes and access_pj must be > 0 (a power "
                                  "law is fitted through their logarithms)",
                                  ys::where(source_, p.Mark()), path));
        continue;
      }
      for (const SramPoint& q : out)
        if (complete && q.capacity_bytes == sp.capacity_bytes)
          add(p.Mark(), fmt::format("{}: {}.capacity_bytes: {} is given twice",
                                    ys::where(source_, p.Mark()), path, sp.capacity_bytes));
      out.push_back(sp);
    }
    return out;
  }

  std::string source_;
  std::vector<std::pair<YAML::Mark, std::string>> errors_;
};

// The default table's text, compiled in from hw_configs/tech/45nm.yaml (CMakeLists.txt).
constexpr const char* kDefaultTechText =
#include "npu_model/tech_default.inc"
    ;

constexpr size_t kMaxTechTableBytes = 1 << 20;
constexpr double kUm2PerMm2 = 1e6;
constexpr double kPjPerUj = 1e6;

}  // namespace

const char* tech_type_name(TechType t) { return kTechTypeNames[static_cast<int>(t)]; }

TechType tech_type(isa::DType t) {
  using isa::DType;
  switch (t) {
    case DType::f16:
      return TechType::fp16;
    case DType::f32:
      return TechType::fp32;
    case DType::i8:
    case DType::u8:
    case DType::boolean:
      return TechType::int8;
    case DType::i16:
    case DType::u16:
      return TechType::int16;
    case DType::i32:
    case DType::u32:
      return TechType::int32;
    case DType::i64:
    case DType::u64:
      return TechType::int64;
  }
  internal_fail("tech_type: dtype {} has no technology type", static_cast<int>(t));
}

TechTable parse_tech_table(const std::string& yaml_text, const std::string& source_name) {
  return TechReader(source_name).run(yaml_text);
}

TechTable load_tech_table(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    fail(
        "{}: cannot read technology table: no such file (expected a YAML file such as "
        "hw_configs/tech/45nm.yaml)",
        path);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot read technology table: {}", path, std::strerror(errno));
  // A table is a few kB; reading stops after the cap, so that a path such as /proc/kcore is an
  // error rather than an endless read.
  std::string text(kMaxTechTableBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) fail("{}: cannot read technology table: {}", path, std::strerror(errno));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxTechTableBytes)
    fail(
        "{}: cannot read technology table: larger than {} bytes (expected a YAML file such as "
        "hw_configs/tech/45nm.yaml, a few kB)",
        path, kMaxTechTableBytes);
  return parse_tech_table(text, path);
}

const TechTable& default_tech_table() {
  static const TechTable table =
      parse_tech_table(kDefaultTechText, "<built-in hw_configs/tech/45nm.yaml>");
  return table;
}

const TechTable& cached_tech_table(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<const TechTable>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(path);
  if (it == cache.end())
    it = cache.emplace(path, std::make_unique<const TechTable>(load_tech_table(path))).first;
  return *it->second;
}

const TechTable& tech_table_for(const HwConfig& hw) {
  return hw.tech.empty() ? default_tech_table() : cached_tech_table(hw.tech);
}

SramFit fit_sram_energy(const std::vector<SramPoint>& points) {
  TESSEL_CHECK(points.size() >= 2, "{} SRAM points", points.size());
  const double c0 = points[0].capacity_bytes;
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  const double n = static_cast<double>(points.size());
  for (const SramPoint& p : points) {
    const double x = std::log(p.capacity_bytes / c0), y = std::log(p.access_pj);
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const double den = n * sxx - sx * sx;
  TESSEL_CHECK(den > 0, "SRAM points with one capacity");
  const double b = (n * sxy - sx * sy) / den;
  const double log_a = (sy - b * sx) / n;
  return SramFit{std::exp(log_a), c0, b};
}

double sram_access_pj(const TechTable& tech, double capacity_bytes) {
  return tech.sram_fit_pj *
         std::pow(capacity_bytes / tech.sram_fit_reference_bytes, tech.sram_fit_exponent);
}

int scratchpad_ports(isa::Scope scope) {
  switch (scope) {
    case isa::Scope::gm:
      return 0;
    case isa::Scope::l1:
      return 3;  // MTE2 (GM -> L1), MTE1 (L1 -> L0A/L0B), MTE3 (UB -> L1)
    case isa::Scope::l0a:
    case isa::Scope::l0b:
      return 2;  // MTE1 writes, CUBE reads
    case isa::Scope::l0c:
      return 2;  // CUBE reads and writes (accumulate), FIX reads
    case isa::Scope::ub:
      return 4;  // MTE2 and FIX write, VECTOR reads and writes, MTE3 reads
  }
  internal_fail("scratchpad_ports: scope {}", static_cast<int>(scope));
}

int l2_tag_bits(const HwConfig& hw) {
  if (!hw.l2.enabled()) return 0;
  const uint64_t line = static_cast<uint64_t>(hw.l2.line_bytes);
  const uint64_t sets = static_cast<uint64_t>(hw.l2.sets());
  const uint64_t lines_of_gm = (static_cast<uint64_t>(hw.dram.capacity_bytes) + line - 1) / line;
  const uint64_t per_set = (lines_of_gm + sets - 1) / sets;  // lines that share one set
  const int tag = per_set <= 1 ? 0 : std::bit_width(per_set - 1);
  const int lru = hw.l2.ways <= 1 ? 0 : std::bit_width(static_cast<uint64_t>(hw.l2.ways) - 1);
  return tag + 2 + lru;
}

VectorOpClass vector_op_class(isa::Opcode op) {
  using isa::Opcode;
  switch (op) {
    case Opcode::vmul:
    case Opcode::vmuls:
    case Opcode::vdiv:
    case Opcode::vexp:
    case Opcode::vln:
    case Opcode::vsqrt:
    case Opcode::vrec:
      return VectorOpClass::mult;
    case Opcode::vmla:
      return VectorOpClass::mac;
    default:
      return VectorOpClass::add;
  }
}

void count_ops(const HwConfig& hw, isa::Pipe pipe, const isa::Instruction& instr,
               const ScopeTraffic& traffic, OpCounts& counts) {
  if (isa::instr_info(instr.op).kind != isa::InstrKind::data) return;
  for (int s = 0; s < isa::kNumScopes; ++s)
    counts.pipe_bytes_written[static_cast<int>(pipe)] += traffic.written[s];
  if (const auto* m = std::get_if<isa::MmadArgs>(&instr.args)) {
    const CubeFractal c = hw.core.cube.fractal(isa::mmad_int8(*m));  // the mode's fractal
    counts.cube_macs += uint64_t{m->m1} * m->k1 * m->n1 * static_cast<uint64_t>(c.m) *
                        static_cast<uint64_t>(c.k) * static_cast<uint64_t>(c.n);
  } else if (const auto* v = std::get_if<isa::VectorArgs>(&instr.args)) {
    isa::DType dt = v->dtype;
    if (instr.op == isa::Opcode::vconv && isa::dtype_bytes(v->src_dtype) > isa::dtype_bytes(dt))
      dt = v->src_dtype;
    counts.vector_elem_ops[static_cast<int>(vector_op_class(instr.op))]
                          [static_cast<int>(tech_type(dt))] += uint64_t{v->count} * v->repeat;
  }
}

Activity activity_of(const sim::SimResult& result) {
  Activity a;
  a.cycles = result.total_cycles;
  a.scalar_instructions = result.instructions;
  a.dram_burst_bytes = result.dram_burst_bytes;
  for (const sim::CoreStats& c : result.cores) {
    a.ops.cube_macs += c.ops.cube_macs;
    for (int k = 0; k < kNumVectorOpClasses; ++k)
      for (int t = 0; t < kNumTechTypes; ++t)
        a.ops.vector_elem_ops[k][t] += c.ops.vector_elem_ops[k][t];
    for (int p = 0; p < isa::kNumPipes; ++p)
      a.ops.pipe_bytes_written[p] += c.ops.pipe_bytes_written[p];
    for (int s = 0; s < isa::kNumScopes; ++s) {
      a.bytes_read[s] += c.bytes_read[s];
      a.bytes_written[s] += c.bytes_written[s];
    }
  }
  const sim::L2Stats& l2 = result.l2;
  a.l2_data_bytes = l2.read_bytes + l2.write_bytes + l2.fill_bytes + l2.writeback_bytes;
  a.l2_line_lookups =
      l2.read_hit_lines + l2.read_miss_lines + l2.write_hit_lines + l2.write_miss_lines;
  a.l2_dirty_bytes_at_end = l2.dirty_bytes_at_end;
  return a;
}

AreaEnergy estimate_area_energy(const HwConfig& hw, const TechTable& tech,
                                const Activity& activity) {
  AreaEnergy r;
  r.tech_name = tech.name;
  r.tech_file = tech.source_file;
  r.seconds = static_cast<double>(activity.cycles) / (hw.clock_ghz * 1e9);
  const double cores = hw.cores;
  const auto& op = [&](isa::DType t) -> const OpCost& {
    return tech.ops[static_cast<int>(tech_type(t))];
  };
  // A component: per-core area (um2, multiplied by the core count unless chip_wide), dynamic
  // energy (pJ, all cores), leakage density (mW/mm2).
  auto component = [&](std::string name, double area_um2, bool chip_wide, double dynamic_pj,
                       double leak_mw_per_mm2) {
    ComponentEstimate c;
    c.name = std::move(name);
    c.area_mm2 = area_um2 / kUm2PerMm2 * (chip_wide ? 1.0 : cores);
    c.dynamic_uj = dynamic_pj / kPjPerUj;
    // mW/mm2 x mm2 = mW; x 1e-3 W/mW x seconds = J; x 1e6 uJ/J.
    c.leakage_uj = c.area_mm2 * leak_mw_per_mm2 * 1e-3 * r.seconds * 1e6;
    r.components.push_back(c);
  };
  const double logic = tech.leakage_logic_mw_per_mm2, sram = tech.leakage_sram_mw_per_mm2;
  const auto& cube = hw.core.cube;
  const double macs_per_cycle = static_cast<double>(cube.m) * cube.k * cube.n;
  component("cube",
            macs_per_cycle * (op(cube.input_dtype).mult_area_um2 + op(cube.acc_dtype).add_area_um2),
            false,
            static_cast<double>(activity.ops.cube_macs) *
                (op(cube.input_dtype).mult_pj + op(cube.acc_dtype).add_pj),
            logic);
  const OpCost& fp32 = tech.ops[static_cast<int>(TechType::fp32)];
  double vector_pj = 0;
  for (int t = 0; t < kNumTechTypes; ++t) {
    const OpCost& c = tech.ops[t];
    const auto& ops = activity.ops.vector_elem_ops;
    vector_pj += static_cast<double>(ops[int(VectorOpClass::add)][t]) * c.add_pj +
                 static_cast<double>(ops[int(VectorOpClass::mult)][t]) * c.mult_pj +
                 static_cast<double>(ops[int(VectorOpClass::mac)][t]) * (c.add_pj + c.mult_pj);
  }
  component("vector", hw.core.vector.width_bytes / 4.0 * (fp32.add_area_um2 + fp32.mult_area_um2),
            false, vector_pj, logic);
  const OpCost& int64 = tech.ops[static_cast<int>(TechType::int64)];
  component("scalar",
            isa::kNumRegs * 64.0 * tech.register_area_um2_per_bit + int64.add_area_um2 +
                int64.mult_area_um2,
            false, static_cast<double>(activity.scalar_instructions) * tech.scalar_instruction_pj,
            logic);
  const auto& b = hw.core.buffers_bytes;
  const std::pair<isa::Scope, int64_t> pads[] = {{isa::Scope::l1, b.l1},
                                                 {isa::Scope::l0a, b.l0a},
                                                 {isa::Scope::l0b, b.l0b},
                                                 {isa::Scope::l0c, b.l0c},
                                                 {isa::Scope::ub, b.ub}};
  for (const auto& [scope, bytes] : pads) {
    const int s = static_cast<int>(scope);
    const double area = static_cast<double>(bytes) * 8.0 * tech.sram_cell_area_um2 /
                        tech.sram_array_efficiency *
                        (1.0 + tech.sram_extra_port_area * (scratchpad_ports(scope) - 1));
    const double accesses =
        static_cast<double>(activity.bytes_read[s] + activity.bytes_written[s]) * 8.0 /
        tech.sram_access_bits;
    component(isa::scope_name(scope), area, false,
              accesses * sram_access_pj(tech, static_cast<double>(bytes)), sram);
  }
  {
    // The shared L2 (chip-wide): data array (one port: banks give its bandwidth) + tag array.
    double area = 0, pj = 0;
    if (hw.l2.enabled()) {
      const double cell = tech.sram_cell_area_um2 / tech.sram_array_efficiency;
      const double capacity = static_cast<double>(hw.l2.capacity_bytes);
      const double lines = capacity / hw.l2.line_bytes;
      const double tag_bits = l2_tag_bits(hw);
      area = (capacity * 8.0 + lines * tag_bits) * cell;
      pj = static_cast<double>(activity.l2_data_bytes + activity.l2_dirty_bytes_at_end) * 8.0 /
               tech.sram_access_bits * sram_access_pj(tech, capacity) +
           static_cast<double>(activity.l2_line_lookups) * hw.l2.ways * tag_bits /
               tech.sram_access_bits * sram_access_pj(tech, lines * tag_bits / 8.0);
    }
    component("l2", area, true, pj, sram);
  }
  const OpCost& int32 = tech.ops[static_cast<int>(TechType::int32)];
  const std::pair<isa::Pipe, const DmaEngineConfig*> engines[] = {{isa::Pipe::mte1, &hw.core.mte1},
                                                                  {isa::Pipe::mte2, &hw.core.mte2},
                                                                  {isa::Pipe::mte3, &hw.core.mte3},
                                                                  {isa::Pipe::fix, &hw.core.fix}};
  for (const auto& [pipe, engine] : engines) {
    // Double-buffered staging register of one cycle's bytes + one address generator per
    // descriptor dimension (an int32 adder and a 64-bit base/stride register pair).
    const double area =
        engine->bytes_per_cycle * 8.0 * 2.0 * tech.register_area_um2_per_bit +
        isa::kMaxDmaDims * (int32.add_area_um2 + 64.0 * tech.register_area_um2_per_bit);
    const double bytes =
        static_cast<double>(activity.ops.pipe_bytes_written[static_cast<int>(pipe)]);
    component(isa::pipe_name(pipe), area, false, bytes * 8.0 * 2.0 * tech.register_pj_per_bit,
              logic);
  }
  component("dram",
            hw.dram.bytes_per_cycle * hw.clock_ghz * tech.dram_interface_area_mm2_per_gb_per_s *
                kUm2PerMm2,
            true,
            static_cast<double>(activity.dram_burst_bytes + activity.l2_dirty_bytes_at_end) * 8.0 *
                tech.dram_pj_per_bit,
            logic);
  for (const ComponentEstimate& c : r.components) {
    r.area_mm2 += c.area_mm2;
    r.dynamic_uj += c.dynamic_uj;
    r.leakage_uj += c.leakage_uj;
  }
  r.energy_uj = r.dynamic_uj + r.leakage_uj;
  r.edp_uj_s = r.energy_uj * r.seconds;
  r.average_power_w = r.seconds > 0 ? r.energy_uj * 1e-6 / r.seconds : 0.0;
  return r;
}

AreaEnergy area_energy(const HwConfig& hw, const sim::SimResult& result) {
  return estimate_area_energy(hw, tech_table_for(hw), activity_of(result));
}

}  // namespace tessel::npu

// HwConfig loading: parse (yaml-cpp) -> apply --hw-set overrides -> validate -> derive.
//
// The schema is one table (schema() below): every key, its kind, its allowed range and where its
// value goes in HwConfig. Validation, override lookup, hw_config_keys() and hw_config_to_yaml() all
// walk that table, so a key cannot be validated one way and documented or serialised another.
// docs/hw_config.md describes every key; tests/npu_model/test_hw_config.cpp checks the messages.
#include "npu_model/hw_config.h"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <regex>
#include <sstream>

#include "compiler/support/error.h"
#include "compiler/support/suggest.h"
#include "npu_model/area_energy.h"
#include "npu_model/dram_address.h"
#include "npu_model/yaml_support.h"

namespace tessel::npu {
namespace {

constexpr int64_t kIntMax = std::numeric_limits<int>::max();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
// Sanity bound on one scratchpad: the functional simulator allocates each one, and on-chip SRAM
// beyond 1 GiB per core is a typo, not a design point.
constexpr int64_t kMaxBufferBytes = int64_t{1} << 30;
// Sanity bound on a cube dimension: keeps m*k*n and the fractal sizes far from overflow.
constexpr int64_t kMaxCubeDim = 4096;
// Bound on memory.dram.burst_bytes: real DRAM bursts are 16..128 bytes; 4 KiB is a page.
constexpr int64_t kMaxBurstBytes = 4096;
// Sanity bound on the clock: catches a value written in MHz (e.g. 1000) instead of GHz.
constexpr double kMaxClockGhz = 100.0;

enum class Kind { section, integer, number, string, dtype, choice };

/// One node of the schema: a section (map of children) or a leaf with its range and accessors.
struct Field {
  std::string name;
  Kind kind = Kind::section;
  int64_t min_int = 0, max_int = 0, multiple_of = 1;  // integer: [min_int, max_int], multiple_of
  bool power_of_two = false;                          // integer: must also be a power of two
  // integer / string / choice: may be absent (default_int, default_string, default index 0);
  // section: may be absent; then every leaf takes its default (unless --hw-set sets a key under
  // it: then it is visited as an empty map, so its required keys must come from overrides)
  bool optional = false;
  bool (*written_when)(const HwConfig&) = nullptr;  // optional section/leaf: written when true
  int64_t default_int = 0;                          // integer: the value of an absent optional key
  std::string default_meaning;       // what the default means, for messages ("byte-granular")
  double max_number = 0;             // number: (0, max_number]
  std::vector<Field> children;       // section
  std::vector<std::string> choices;  // string: the allowed values (empty: any non-empty text);
                                     // choice: the names, the value being the index
  std::string default_string;        // string with choices, optional: the value when absent
  /// Optional section: present in the config only when this returns true for the fields visited
  /// before it (e.g. memory.dram.banked when memory.dram.model is banked); its value may also be a
  /// file name (a YAML file holding the section's map, relative to the including file).
  bool (*present)(const HwConfig&) = nullptr;
  const char* present_condition = "";  // what `present` tests, for messages
  void (*set_int)(HwConfig&, int64_t) = nullptr;
  int64_t (*get_int)(const HwConfig&) = nullptr;
  void (*set_number)(HwConfig&, double) = nullptr;
  double (*get_number)(const HwConfig&) = nullptr;
  void (*set_string)(HwConfig&, const std::string&) = nullptr;
  std::string (*get_string)(const HwConfig&) = nullptr;
  void (*set_dtype)(HwConfig&, isa::DType) = nullptr;
  isa::DType (*get_dtype)(const HwConfig&) = nullptr;
};

Field section(std::string name, std::vector<Field> children) {
  Field f;
  f.name = std::move(name);
  f.kind = Kind::section;
  f.children = std::move(children);
  return f;
}

Field integer(std::string name, int64_t min, int64_t max, int64_t multiple_of,
              void (*set)(HwConfig&, int64_t), int64_t (*get)(const HwConfig&)) {
  Field f;
  f.name = std::move(name);
  f.kind = Kind::integer;
  f.min_int = min;
  f.max_int = max;
  f.multiple_of = multiple_of;
  f.set_int = set;
  f.get_int = get;
  return f;
}

// An integer leaf bound to the HwConfig member `MEMBER` (e.g. core.cube.m).
#define TESSEL_INT(NAME, MEMBER, MIN, MAX, MULTIPLE)                                 \
  integer(                                                                           \
      NAME, MIN, MAX, MULTIPLE,                                                      \
      [](HwConfig& h, int64_t v) { h.MEMBER = static_cast<decltype(h.MEMBER)>(v); }, \
      [](const HwConfig& h) { return static_cast<int64_t>(h.MEMBER); })

/// An optional power-of-two integer leaf: absent means `default_value` (documented as `meaning`).
Field optional_power_of_two(Field f, int64_t default_value, std::string meaning) {
  f.power_of_two = true;
  f.optional = true;
  f.default_int = default_value;
  f.default_meaning = std::move(meaning);
  return f;
}

/// An optional string leaf with a fixed set of values; absent means choices.front().
Field choice(std::string name, std::vector<std::string> choices,
             void (*set)(HwConfig&, const std::string&), std::string (*get)(const HwConfig&)) {
  Field f;
  f.name = std::move(name);
  f.kind = Kind::string;
  f.optional = true;
  f.default_string = choices.front();
  f.choices = std::move(choices);
  f.set_string = set;
  f.get_string = get;
  return f;
}

/// The banked DRAM model's section (memory.dram.banked; DramBankedConfig, docs/memory.md).
Field banked_dram_section();

/// An optional leaf: absent means `default_value` (documented as `meaning`).
Field optional_leaf(Field f, int64_t default_value, std::string meaning) {
  f.optional = true;
  f.default_int = default_value;
  f.default_meaning = std::move(meaning);
  return f;
}

/// A leaf whose value is one of `names` (stored as its index), optional with default index 0.
Field index_choice(std::string name, std::vector<std::string> names,
                   void (*set)(HwConfig&, int64_t), int64_t (*get)(const HwConfig&),
                   std::string meaning) {
  Field f;
  f.name = std::move(name);
  f.kind = Kind::choice;
  f.choices = std::move(names);
  f.set_int = set;
  f.get_int = get;
  return optional_leaf(std::move(f), 0, std::move(meaning));
}

/// An optional section, written back only when `present` says the config has it.
Field optional_section(Field f, bool (*present)(const HwConfig&)) {
  f.optional = true;
  f.written_when = present;
  return f;
}

#define TESSEL_DTYPE(NAME, MEMBER)                                 \
  [] {                                                             \
    Field f;                                                       \
    f.name = NAME;                                                 \
    f.kind = Kind::dtype;                                          \
    f.set_dtype = [](HwConfig& h, isa::DType v) { h.MEMBER = v; }; \
    f.get_dtype = [](const HwConfig& h) { return h.MEMBER; };      \
    return f;                                                      \
  }()

#define TESSEL_DMA(NAME, MEMBER)                                                            \
  section(NAME, {TESSEL_INT("bytes_per_cycle", core.MEMBER.bytes_per_cycle, 1, kIntMax, 1), \
                 TESSEL_INT("latency_cycles", core.MEMBER.latency_cycles, 0, kIntMax, 1)})

/// The whole schema, in the order the presets write it.
const Field& schema() {
  static const Field root = [] {
    Field name;
    name.name = "name";
    name.kind = Kind::string;
    name.set_string = [](HwConfig& h, const std::string& v) { h.name = v; };
    name.get_string = [](const HwConfig& h) { return h.name; };

    Field clock;
    clock.name = "clock_ghz";
    clock.kind = Kind::number;
    clock.max_number = kMaxClockGhz;
    clock.set_number = [](HwConfig& h, double v) { h.clock_ghz = v; };
    clock.get_number = [](const HwConfig& h) { return h.clock_ghz; };

    // The area/energy model's technology table: optional, absent = the built-in 45 nm table.
    Field tech;
    tech.name = "tech";
    tech.kind = Kind::string;
    tech.optional = true;
    tech.default_meaning = "the built-in hw_configs/tech/45nm.yaml";
    tech.set_string = [](HwConfig& h, const std::string& v) { h.tech = v; };
    tech.get_string = [](const HwConfig& h) { return h.tech; };

    // The int8 mode's fractal, core.cube.int8 (optional; absent: the float m, k, n).
    const Field cube_int8 =
        optional_section(section("int8", {TESSEL_INT("m", core.cube.int8.m, 1, kMaxCubeDim, 1),
                                          TESSEL_INT("k", core.cube.int8.k, 1, kMaxCubeDim, 1),
                                          TESSEL_INT("n", core.cube.int8.n, 1, kMaxCubeDim, 1)}),
                         [](const HwConfig& h) { return h.core.cube.int8.m > 0; });

    return section(
        "",
        {name, clock, TESSEL_INT("cores", cores, 1, 1024, 1),
         section("core",
                 {section("scalar", {TESSEL_INT("cycles_per_instruction",
                                                core.scalar.cycles_per_instruction, 1, kIntMax, 1),
                                     TESSEL_INT("issue_queue_depth", core.scalar.issue_queue_depth,
                                                1, kIntMax, 1)}),
                  section("cube", {TESSEL_INT("m", core.cube.m, 1, kMaxCubeDim, 1),
                                   TESSEL_INT("k", core.cube.k, 1, kMaxCubeDim, 1),
                                   TESSEL_INT("n", core.cube.n, 1, kMaxCubeDim, 1),
                                   TESSEL_DTYPE("input_dtype", core.cube.input_dtype),
                                   TESSEL_DTYPE("acc_dtype", core.cube.acc_dtype),
                                   TESSEL_INT("pipeline_latency_cycles",
                                              core.cube.pipeline_latency_cycles, 0, kIntMax, 1),
                                   cube_int8,
                                   choice(
                                       "model", {"tlm", "rtl"},
                                       [](HwConfig& h, const std::string& v) {
                                         h.core.cube.model =
                                             v == "rtl" ? CubeModel::rtl : CubeModel::tlm;
                                       },
                                       [](const HwConfig& h) -> std::string {
                                         return h.core.cube.model == CubeModel::rtl ? "rtl" : "tlm";
                                       }),
                                   [] {
                                     Field f = optional_leaf(
                                         TESSEL_INT("rtl_sample", core.cube.rtl_sample, 0,
                                                    kInt64Max, 1),
                                         0, "every int8 mmad runs on the RTL");
                                     // Written only when set: the text (and hash) of a config
                                     // without it is unchanged.
                                     f.written_when = [](const HwConfig& h) {
                                       return h.core.cube.rtl_sample > 0;
                                     };
                                     return f;
                                   }()}),
                  section("vector",
                          {TESSEL_INT("width_bytes", core.vector.width_bytes, 32, kIntMax, 32),
                           TESSEL_INT("pipeline_latency_cycles",
                                      core.vector.pipeline_latency_cycles, 0, kIntMax, 1)}),
                  section("buffers_bytes",
                          {TESSEL_INT("l1", core.buffers_bytes.l1, 32, kMaxBufferBytes, 32),
                           TESSEL_INT("l0a", core.buffers_bytes.l0a, 32, kMaxBufferBytes, 32),
                           TESSEL_INT("l0b", core.buffers_bytes.l0b, 32, kMaxBufferBytes, 32),
                           TESSEL_INT("l0c", core.buffers_bytes.l0c, 32, kMaxBufferBytes, 32),
                           TESSEL_INT("ub", core.buffers_bytes.ub, 32, kMaxBufferBytes, 32)}),
                  section("dma", {TESSEL_DMA("mte1", mte1), TESSEL_DMA("mte2", mte2),
                                  TESSEL_DMA("mte3", mte3), TESSEL_DMA("fix", fix)}),
                  section("sync", {TESSEL_INT("event_ids", core.sync_event_ids, 1, 64, 1)})}),
         section(
             "memory",
             {section("dram", {TESSEL_INT("bytes_per_cycle", dram.bytes_per_cycle, 1, kIntMax, 1),
                               TESSEL_INT("latency_cycles", dram.latency_cycles, 0, kIntMax, 1),
                               TESSEL_INT("capacity_bytes", dram.capacity_bytes, 1, kInt64Max, 1),
                               optional_power_of_two(TESSEL_INT("burst_bytes", dram.burst_bytes, 1,
                                                                kMaxBurstBytes, 1),
                                                     1, "byte-granular DRAM, no burst rounding"),
                               choice(
                                   "model", {"simple", "banked"},
                                   [](HwConfig& h, const std::string& v) {
                                     h.dram.model =
                                         v == "banked" ? DramModel::banked : DramModel::simple;
                                   },
                                   [](const HwConfig& h) -> std::string {
                                     return h.dram.model == DramModel::banked ? "banked" : "simple";
                                   }),
                               banked_dram_section()}),
              optional_section(
                  section(
                      "l2",
                      {TESSEL_INT("capacity_bytes", l2.capacity_bytes, 1, kInt64Max, 1),
                       optional_power_of_two(
                           TESSEL_INT("line_bytes", l2.line_bytes, 32, kMaxBurstBytes, 1), 128,
                           "128-byte lines"),
                       optional_leaf(
                           TESSEL_INT("ways", l2.ways, 1, 1024, 1), 16, "16-way set-associative"),
                       optional_leaf(TESSEL_INT("banks", l2.banks, 1, 1024, 1), 16, "16 banks"),
                       optional_leaf(
                           TESSEL_INT("bytes_per_cycle", l2.bytes_per_cycle, 1, kIntMax, 1), 64,
                           "64 bytes per cycle per bank"),
                       optional_leaf(TESSEL_INT("latency_cycles", l2.latency_cycles, 0, kIntMax, 1),
                                     40, "40 cycles"),
                       index_choice(
                           "write_policy", {"write_back", "write_through"},
                           [](HwConfig& h, int64_t v) {
                             h.l2.write_policy = static_cast<L2WritePolicy>(v);
                           },
                           [](const HwConfig& h) {
                             return static_cast<int64_t>(h.l2.write_policy);
                           },
                           "write_back"),
                       [] {
                         Field f = index_choice(
                             "placement", {"none", "prefetch", "discard", "prefetch_discard"},
                             [](HwConfig& h, int64_t v) {
                               h.l2.placement = static_cast<L2Placement>(v);
                             },
                             [](const HwConfig& h) { return static_cast<int64_t>(h.l2.placement); },
                             "none: no L2 hints; prefetch: the compiler prefetches the next "
                             "kernels' weights into L2 (l2_prefetch); discard: it drops dead "
                             "intermediate tensors' lines without write-back (l2_discard); "
                             "prefetch_discard: both");
                         f.written_when = [](const HwConfig& h) {
                           return h.l2.placement != L2Placement::none;
                         };  // when set: configs without it keep their written form and hash
                         return f;
                       }()}),
                  [](const HwConfig& h) { return h.l2.enabled(); }),
              [] {
                Field f = index_choice(
                    "multicast", {"none", "dma_mc"},
                    [](HwConfig& h, int64_t v) { h.multicast = v != 0; },
                    [](const HwConfig& h) { return int64_t{h.multicast}; },
                    "none: no multicast, dma_mc is an error");
                f.written_when = [](const HwConfig& h) { return h.multicast; };  // when set
                return f;
              }()}),
         tech});
  }();
  return root;
}

Field banked_dram_section() {
  Field name;
  name.name = "name";
  name.kind = Kind::string;
  name.set_string = [](HwConfig& h, const std::string& v) { h.dram.banked.name = v; };
  name.get_string = [](const HwConfig& h) { return h.dram.banked.name; };
  auto pow2 = [](Field f) {
    f.power_of_two = true;
    return f;
  };
#define TESSEL_BANKED(NAME, MEMBER, MIN, MAX) TESSEL_INT(NAME, dram.banked.MEMBER, MIN, MAX, 1)
#define TESSEL_TCK(NAME, MIN) TESSEL_INT(#NAME, dram.banked.timing.NAME, MIN, kIntMax, 1)
  Field f = section(
      "banked",
      {name, pow2(TESSEL_BANKED("channels", channels, 1, 1024)),
       pow2(TESSEL_BANKED("ranks", ranks, 1, 16)),
       pow2(TESSEL_BANKED("bank_groups", bank_groups, 1, 64)),
       pow2(TESSEL_BANKED("banks_per_group", banks_per_group, 1, 64)),
       pow2(TESSEL_BANKED("rows", rows, 1, int64_t{1} << 24)),
       pow2(TESSEL_BANKED("row_bytes", row_bytes, 1, 1 << 16)),
       pow2(TESSEL_BANKED("bus_width_bits", bus_width_bits, 8, 1024)),
       pow2(TESSEL_BANKED("burst_length", burst_length, 1, 64)),
       pow2(TESSEL_BANKED("transfers_per_ck", transfers_per_ck, 1, 64)),
       TESSEL_BANKED("queue_depth", queue_depth, 1, 1024),
       [] {
         Field m;
         m.name = "address_mapping";
         m.kind = Kind::string;
         m.set_string = [](HwConfig& h, const std::string& v) {
           h.dram.banked.address_mapping = v;
         };
         m.get_string = [](const HwConfig& h) { return h.dram.banked.address_mapping; };
         return m;
       }(),
       choice(
           "channel_hash", {"none", "xor"},
           [](HwConfig& h, const std::string& v) { h.dram.banked.channel_xor = v == "xor"; },
           [](const HwConfig& h) -> std::string {
             return h.dram.banked.channel_xor ? "xor" : "none";
           }),
       [] {
         Field p = choice(
             "page_policy", {"open_page", "closed_page"},
             [](HwConfig& h, const std::string& v) {
               h.dram.banked.page_policy =
                   v == "closed_page" ? PagePolicy::closed_page : PagePolicy::open_page;
             },
             [](const HwConfig& h) -> std::string {
               return h.dram.banked.page_policy == PagePolicy::closed_page ? "closed_page"
                                                                           : "open_page";
             });
         p.optional = false;  // a policy is a design choice: the preset states it
         return p;
       }(),
       TESSEL_INT("tCK_ps", dram.banked.timing.tCK_ps, 1, 1000000, 1),
       section("timing_ck", {TESSEL_TCK(tRCD, 1), TESSEL_TCK(tRP, 1), TESSEL_TCK(tCL, 1),
                             TESSEL_TCK(tCWL, 1), TESSEL_TCK(tRAS, 1), TESSEL_TCK(tRRD_S, 1),
                             TESSEL_TCK(tRRD_L, 1), TESSEL_TCK(tFAW, 1), TESSEL_TCK(tCCD_S, 1),
                             TESSEL_TCK(tCCD_L, 1), TESSEL_TCK(tRTP, 1), TESSEL_TCK(tWR, 1),
                             TESSEL_TCK(tWTR, 1), TESSEL_TCK(tREFI, 1), TESSEL_TCK(tRFC, 1)})});
#undef TESSEL_BANKED
#undef TESSEL_TCK
  f.present = [](const HwConfig& h) { return h.dram.model == DramModel::banked; };
  f.present_condition = "memory.dram.model is banked";
  return f;
}

#undef TESSEL_INT
#undef TESSEL_DTYPE
#undef TESSEL_DMA

std::string join_path(const std::string& parent, const std::string& name) {
  return parent.empty() ? name : parent + "." + name;
}

std::string child_names(const Field& f) {
  std::string out;
  for (const Field& c : f.children) out += (out.empty() ? "" : ", ") + c.name;
  return out;
}

/// What a valid value of `f` looks like, for "expected ..." in messages.
std::string expected(const Field& f) {
  switch (f.kind) {
    case Kind::section:
      return fmt::format("a map with keys {}", child_names(f));
    case Kind::string: {
      if (f.choices.empty())
        return f.optional ? fmt::format("a non-empty string (optional: when absent, {})",
                                        f.default_meaning)
                          : "a non-empty string";
      std::string out = "one of ";
      for (size_t i = 0; i < f.choices.size(); ++i) out += (i ? ", " : "") + f.choices[i];
      if (f.optional) out += fmt::format(" (optional: when absent, {})", f.default_string);
      return out;
    }
    case Kind::dtype:
      return "one of fp16, fp32";
    case Kind::choice: {
      std::string out = "one of ";
      for (size_t i = 0; i < f.choices.size(); ++i) out += (i ? ", " : "") + f.choices[i];
      return out + fmt::format(" (optional: when absent, {})", f.default_meaning);
    }
    case Kind::number:
      return fmt::format("a number > 0 and <= {}", f.max_number);
    case Kind::integer: {
      if (f.power_of_two) {
        std::string out = fmt::format("a power of two in [{}, {}]", f.min_int, f.max_int);
        if (f.optional)
          out += fmt::format(" (optional: when absent, {} = {})", f.default_int, f.default_meaning);
        return out;
      }
      std::string out = (f.max_int == kIntMax || f.max_int == kInt64Max)
                            ? fmt::format("an integer >= {}", f.min_int)
                            : fmt::format("an integer in [{}, {}]", f.min_int, f.max_int);
      if (f.multiple_of > 1) out += fmt::format(" and a multiple of {}", f.multiple_of);
      if (f.optional)
        out += fmt::format(" (optional: when absent, {} = {})", f.default_int, f.default_meaning);
      return out;
    }
  }
  return "?";
}

/// Finds the schema node for a dotted key ("core.buffers_bytes.ub"); nullptr if it does not exist.
/// On failure, *deepest is the deepest section that matched (for the error message).
const Field* find_field(const std::string& dotted, const Field** deepest,
                        std::string* deepest_path) {
  const Field* node = &schema();
  std::string path;
  *deepest = node;
  *deepest_path = "";
  size_t begin = 0;
  while (true) {
    const size_t dot = dotted.find('.', begin);
    const std::string part = dotted.substr(begin, dot == std::string::npos ? dot : dot - begin);
    const Field* next = nullptr;
    for (const Field& c : node->children)
      if (c.name == part) next = &c;
    if (next == nullptr) return nullptr;
    path = join_path(path, part);
    node = next;
    if (dot == std::string::npos) return node;
    if (node->kind != Kind::section) return nullptr;
    *deepest = node;
    *deepest_path = path;
    begin = dot + 1;
  }
}

void collect_keys(const Field& f, const std::string& path, std::vector<std::string>& out) {
  for (const Field& c : f.children) {
    const std::string p = join_path(path, c.name);
    if (c.kind == Kind::section)
      collect_keys(c, p, out);
    else
      out.push_back(p);
  }
}

std::string suggestion(const Field& section_field, const std::string& name) {
  std::vector<std::string> names;
  for (const Field& c : section_field.children) names.push_back(c.name);
  return did_you_mean(name, names);
}

/// The offset of the first byte of `s` that does not start or continue a well-formed UTF-8
/// sequence (Unicode 15, table 3-7: no overlong forms, no surrogates, at most U+10FFFF), or npos.
size_t first_invalid_utf8(const std::string& s) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = byte(i);
    size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      n = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return i;
    }
    if (i + n >= s.size()) return i;  // cut short
    for (size_t k = 1; k <= n; ++k) {
      const unsigned char b = byte(i + k);
      if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) return i;
    }
    i += n + 1;
  }
  return std::string::npos;
}

bool is_quoted_string(const YAML::Node& n) {
  return n.Tag() == "!" || n.Tag() == "tag:yaml.org,2002:str";
}

/// How a value that has the wrong form is described in messages ("got ...").
std::string describe(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return "nothing (an empty value)";
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar:
      return is_quoted_string(n) ? fmt::format("the quoted string '{}'", n.Scalar())
                                 : fmt::format("'{}'", n.Scalar());
  }
  return "?";
}

const std::regex& integer_syntax() {
  static const std::regex re("[-+]?[0-9]+");
  return re;
}

// YAML 1.2 core-schema float (without .inf/.nan, which are never valid here).
const std::regex& number_syntax() {
  static const std::regex re(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  return re;
}

bool is_bool_text(const std::string& s) {
  static const char* const kBools[] = {"true",  "false", "True", "False", "TRUE",
                                       "FALSE", "yes",   "no",   "on",    "off"};
  return std::find(std::begin(kBools), std::end(kBools), s) != std::end(kBools);
}

bool is_special_number_text(const std::string& s) {
  std::string t = s;
  if (!t.empty() && (t[0] == '+' || t[0] == '-')) t.erase(0, 1);
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  return t == ".inf" || t == ".nan";
}

/// A value as it reaches validation: its node and where it came from (file position or override).
struct Value {
  YAML::Node node;
  std::string key;    // dotted key
  std::string where;  // "file:line:col: key" or "file: --hw-set key=value"
  YAML::Mark mark;    // position in the file; null for an override
  const HwOverride* override_ = nullptr;
};

struct PreparedOverride {
  HwOverride ov;
  YAML::Node node;
};

std::string mark_text(const std::string& source, const YAML::Mark& mark) {
  if (mark.is_null()) return source;
  return fmt::format("{}:{}:{}", source, mark.line + 1, mark.column + 1);
}

/// Records where each document of a YAML stream starts (its first node), nothing else.
class DocumentMarks : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> starts;
  void OnDocumentStart(const YAML::Mark&) override { first_ = true; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { node(m); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { node(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                const std::string&) override {
    node(m);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    node(m);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    node(m);
  }
  void OnMapEnd() override {}

 private:
  void node(const YAML::Mark& m) {
    if (first_) starts.push_back(m);
    first_ = false;
  }
  bool first_ = false;
};

/// The first document of `text` and, in `second`, where a second one starts (null when there is
/// none). Not YAML::LoadAll: in yaml-cpp 0.7 it loops forever, allocating a null document per turn,
/// on a token no grammar rule consumes, such as a stray ',' (jbeder/yaml-cpp#1319, fixed in 0.8);
/// here a document that starts where the previous one started is that case, reported as a syntax
/// error at the token. Throws YAML::Exception on other syntax errors.
YAML::Node load_first_document(const std::string& text, const std::string& source,
                               YAML::Mark& second) {
  second = YAML::Mark::null_mark();
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentMarks marks;
  while (marks.starts.size() < 2 && parser.HandleNextDocument(marks)) {
  }
  if (marks.starts.size() == 2) {
    const YAML::Mark& m = marks.starts[1];
    if (m.pos == marks.starts[0].pos) {
      const char c = m.pos >= 0 && m.pos < static_cast<int>(text.size()) ? text[m.pos] : ' ';
      fail("{}:{}:{}: YAML syntax error: unexpected '{}'", source, m.line + 1, m.column + 1, c);
    }
    second = m;
  }
  return YAML::Load(text);
}

/// One load: walks the schema over the parsed tree, collecting every error before throwing.
class Loader {
 public:
  explicit Loader(std::string source) : source_(source), root_source_(std::move(source)) {}

  HwConfig run(const std::string& text, const std::vector<HwOverride>& overrides) {
    YAML::Node doc;
    YAML::Mark second;
    try {
      doc = load_first_document(text, source_, second);
    } catch (const YAML::Exception& e) {
      fail("{}: YAML syntax error: {}", mark_text(source_, e.mark), e.msg);
    }
    prepare_overrides(overrides);
    if (!second.is_null()) {
      add(second, fmt::format("{}: a hardware config is one YAML document; found a second one here",
                              mark_text(source_, second)));
    }
    if (!doc || doc.IsNull()) {
      add(YAML::Mark(),
          fmt::format("{}:1:1: the file has no content; expected {}", source_, expected(schema())));
    } else {
      YAML::Mark root_mark = doc.Mark();
      visit_section(schema(), doc, "", root_mark);
    }
    if (errors_.empty()) check_minimum_tiles();
    if (errors_.empty()) check_tech_table();
    if (errors_.empty() && hw_.dram.model == DramModel::banked) check_banked_dram();
    if (errors_.empty()) check_l2();
    if (errors_.empty() && hw_.core.cube.rtl_sample > 0 && hw_.core.cube.model != CubeModel::rtl) {
      const std::string msg = fmt::format(
          "{} mmads sampled, but it applies only when core.cube.model is rtl; remove it or set "
          "that{}",
          hw_.core.cube.rtl_sample,
          valid_.count("core.cube.model")
              ? override_note({"core.cube.rtl_sample", "core.cube.model"})
              : override_note({"core.cube.rtl_sample"}));
      if (const auto it = valid_.find("core.cube.rtl_sample"); it != valid_.end())
        error(it->second, msg);
      else
        add(YAML::Mark::null_mark(), fmt::format("{}: core.cube.rtl_sample: {}", source_, msg));
    }
    if (!errors_.empty()) throw Error(report());
    hw_.source_file = source_;
    derive();
    return hw_;
  }

 private:
  struct Problem {
    YAML::Mark mark;  // null (sorted last) for problems of an override
    std::string text;
  };

  void add(const YAML::Mark& mark, std::string text) {
    errors_.push_back(Problem{mark, std::move(text)});
  }

  void error(const Value& v, const std::string& message) {
    add(v.mark, fmt::format("{}: {}", v.where, message));
  }

  /// All problems, one per line, in file order (then overrides in command-line order); long lists
  /// are cut after kMaxReported so a wrong file (e.g. an experiment YAML) stays readable.
  std::string report() {
    constexpr size_t kMaxReported = 25;
    std::stable_sort(errors_.begin(), errors_.end(), [](const Problem& a, const Problem& b) {
      auto key = [](const YAML::Mark& m) {
        return m.is_null() ? std::pair{std::numeric_limits<int>::max(), 0}
                           : std::pair{m.line, m.column};
      };
      return key(a.mark) < key(b.mark);
    });
    std::string message;
    for (size_t i = 0; i < errors_.size() && i < kMaxReported; ++i)
      message += (i == 0 ? "" : "\n") + errors_[i].text;
    if (errors_.size() > kMaxReported)
      message += fmt::format("\n... and {} more problems", errors_.size() - kMaxReported);
    return message;
  }

  void prepare_overrides(const std::vector<HwOverride>& overrides) {
    for (const HwOverride& ov : overrides) {
      const std::string where = fmt::format("{}: --hw-set {}={}", source_, ov.key, ov.value);
      const Field* deepest = nullptr;
      std::string deepest_path;
      const Field* f = find_field(ov.key, &deepest, &deepest_path);
      if (f == nullptr && deepest_path != ov.key) {
        // A prefix of the key may name a value ("cores.count"): say so rather than list keys.
        const size_t next_dot =
            ov.key.find('.', deepest_path.empty() ? 0 : deepest_path.size() + 1);
        const std::string prefix = ov.key.substr(0, next_dot);
        const Field* ignored = nullptr;
        std::string ignored_path;
        const Field* leaf = find_field(prefix, &ignored, &ignored_path);
        if (leaf != nullptr && leaf->kind != Kind::section) {
          add(YAML::Mark::null_mark(),
              fmt::format("{}: unknown key '{}'; '{}' is a value and has no keys", where, ov.key,
                          prefix));
          continue;
        }
      }
      if (f == nullptr) {
        add(YAML::Mark::null_mark(),
            fmt::format("{}: unknown key '{}'; {} {}", where, ov.key,
                        deepest_path.empty() ? "the top-level keys are"
                                             : fmt::format("'{}' has keys", deepest_path),
                        child_names(*deepest)));
        continue;
      }
      if (f->kind == Kind::section) {
        std::vector<std::string> keys;
        collect_keys(*f, ov.key, keys);
        std::string list;
        for (const auto& k : keys) list += (list.empty() ? "" : ", ") + k;
        add(YAML::Mark::null_mark(),
            fmt::format("{}: '{}' is a section, not a value; set one of its keys instead: {}",
                        where, ov.key, list));
        continue;
      }
      YAML::Node node;
      try {
        node = YAML::Load(ov.value);
      } catch (const YAML::Exception& e) {
        add(YAML::Mark::null_mark(),
            fmt::format("{}: the value is not a valid YAML scalar: {}", where, e.msg));
        continue;
      }
      // A later override of the same key wins, as with repeated command-line options.
      overrides_[ov.key] = PreparedOverride{ov, node};
    }
  }

  /// `node` is the value of section `f` at dotted `path`; `key_mark` is where its key is written
  /// (the line a "missing key" error points at).
  void visit_section(const Field& f, const YAML::Node& node, const std::string& path,
                     const YAML::Mark& key_mark) {
    if (!node.IsMap()) {
      const YAML::Mark mark = node.IsNull() ? key_mark : node.Mark();
      add(mark, fmt::format("{}: {}expected {}, got {}", mark_text(source_, mark),
                            path.empty() ? "" : path + ": ", expected(f), describe(node)));
      return;
    }
    struct Entry {
      YAML::Node key, value;
    };
    std::map<std::string, Entry> present;
    for (auto it = node.begin(); it != node.end(); ++it) {
      const YAML::Node key = it->first;  // a copy: the iterator's pair is a temporary proxy
      if (!key.IsScalar()) {
        add(key.Mark(),
            fmt::format("{}: {}a key must be a plain name, got {}", mark_text(source_, key.Mark()),
                        path.empty() ? "" : path + ": ", describe(key)));
        continue;
      }
      const std::string name = key.Scalar();
      const std::string full = join_path(path, name);
      const bool known = std::any_of(f.children.begin(), f.children.end(),
                                     [&](const Field& c) { return c.name == name; });
      if (!known) {
        add(key.Mark(),
            fmt::format("{}: {}: unknown key; expected one of {}{}", mark_text(source_, key.Mark()),
                        full, child_names(f), suggestion(f, name)));
        continue;
      }
      auto [pos, inserted] = present.emplace(name, Entry{key, it->second});
      if (!inserted) {
        add(key.Mark(),
            fmt::format("{}: {}: duplicate key (first given at line {})",
                        mark_text(source_, key.Mark()), full, pos->second.key.Mark().line + 1));
      }
    }
    for (const Field& child : f.children) {
      const std::string full = join_path(path, child.name);
      auto ov = overrides_.find(full);
      auto it = present.find(child.name);
      if (child.kind != Kind::section && ov != overrides_.end()) {
        Value v{
            ov->second.node, full,
            fmt::format("{}: --hw-set {}={}", root_source_, ov->second.ov.key, ov->second.ov.value),
            YAML::Mark::null_mark(), &ov->second.ov};
        visit_leaf(child, v);
      } else if (it == present.end() && child.kind == Kind::section && child.optional) {
        if (has_override_under(full))
          visit_section(child, YAML::Node(YAML::NodeType::Map), full, key_mark);
        else
          set_defaults(child);  // an absent optional section: every leaf's documented default
      } else if (it == present.end() && child.optional) {
        // documented default (docs/hw_config.md)
        if (child.kind == Kind::string)
          child.set_string(hw_, child.default_string);
        else
          child.set_int(hw_, child.default_int);
      } else if (child.present != nullptr) {
        visit_optional_section(child, it == present.end() ? nullptr : &it->second.value,
                               it == present.end() ? key_mark : it->second.key.Mark(), full);
      } else if (it == present.end()) {
        add(key_mark, fmt::format("{}: {}missing required key '{}'; expected {}",
                                  mark_text(source_, key_mark), path.empty() ? "" : path + ": ",
                                  child.name, expected(child)));
      } else if (child.kind == Kind::section) {
        visit_section(child, it->second.value, full, it->second.key.Mark());
      } else {
        const YAML::Node& value = it->second.value;
        const YAML::Mark mark = value.IsNull() ? it->second.key.Mark() : value.Mark();
        Value v{value, full, fmt::format("{}: {}", mark_text(source_, mark), full), mark};
        visit_leaf(child, v);
      }
    }
  }

  /// An optional section (Field::present): required when its condition holds, an error when it
  /// does not; a scalar value names a YAML file (relative to the including file) holding the map.
  void visit_optional_section(const Field& f, const YAML::Node* node, const YAML::Mark& mark,
                              const std::string& full) {
    const bool wanted = f.present(hw_);
    if (node == nullptr) {
      if (wanted) {
        add(mark, fmt::format("{}: missing required key '{}' ({}); expected {} or the name of a "
                              "YAML file holding it",
                              mark_text(source_, mark), full, f.present_condition, expected(f)));
      }
      // Overrides of keys inside an absent section would otherwise be ignored.
      for (const auto& [key, ov] : overrides_)
        if (key.rfind(full + ".", 0) == 0)
          add(YAML::Mark::null_mark(),
              fmt::format("{}: --hw-set {}={}: '{}' does not apply: the config has no {} section "
                          "(it needs {})",
                          source_, ov.ov.key, ov.ov.value, key, full, f.present_condition));
      return;
    }
    if (!wanted) {
      add(mark, fmt::format("{}: {}: given, but it applies only when {}; remove it or set that",
                            mark_text(source_, mark), full, f.present_condition));
      return;
    }
    if (!node->IsScalar()) {
      visit_section(f, *node, full, mark);
      return;
    }
    // The section lives in its own file: load it and visit it with that file as the source.
    namespace fs = std::filesystem;
    const std::string name = node->Scalar();
    const fs::path base = fs::path(source_).parent_path();
    const fs::path path = fs::path(name).is_absolute() ? fs::path(name) : base / name;
    const std::string where = mark_text(source_, node->Mark());
    std::error_code ec;
    if (name.empty() || !fs::is_regular_file(path, ec)) {
      add(node->Mark(),
          fmt::format("{}: {}: cannot read '{}' ({}); expected {} or the name of a "
                      "YAML file holding it, relative to this file",
                      where, full, path.string(),
                      fs::exists(path, ec) ? "not a regular file" : "no such file", expected(f)));
      return;
    }
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    const std::string included = path.lexically_normal().string();
    YAML::Node doc;
    try {
      YAML::Mark second;
      doc = load_first_document(text.str(), included, second);
    } catch (const YAML::Exception& e) {
      add(node->Mark(), fmt::format("{} (included by {}): YAML syntax error: {}",
                                    mark_text(included, e.mark), where, e.msg));
      return;
    } catch (const Error& e) {
      add(node->Mark(), fmt::format("{} (included by {})", e.what(), where));
      return;
    }
    const std::string saved = source_;
    source_ = included;
    visit_section(f, doc, full, YAML::Mark());
    source_ = saved;
  }

  bool has_override_under(const std::string& path) const {
    for (const auto& [key, ov] : overrides_)
      if (key.rfind(path + ".", 0) == 0) return true;
    return false;
  }

  void set_defaults(const Field& f) {
    for (const Field& c : f.children) {
      if (c.kind == Kind::section)
        set_defaults(c);
      else if (c.set_int)
        c.set_int(hw_, c.optional ? c.default_int : 0);
    }
  }

  void visit_leaf(const Field& f, const Value& v) {
    if (!v.node.IsScalar()) {
      error(v, fmt::format("expected {}, got {}", expected(f), describe(v.node)));
      return;
    }
    const std::string& text = v.node.Scalar();
    switch (f.kind) {
      case Kind::section:
        break;
      case Kind::string:
        if (text.empty()) {
          error(v, fmt::format("expected {}, got an empty string", expected(f)));
          return;
        }
        if (!f.choices.empty() &&
            std::find(f.choices.begin(), f.choices.end(), text) == f.choices.end()) {
          error(v, fmt::format("expected {}, got {}{}", expected(f), describe(v.node),
                               did_you_mean(text, f.choices)));
          return;
        }
        // Reports, traces and hw_config_to_yaml write the name as text; yaml-cpp's emitter
        // replaces bytes that are not UTF-8, so such a name would not survive a round trip.
        if (const size_t bad = first_invalid_utf8(text); bad != std::string::npos) {
          error(v, fmt::format("expected {} of UTF-8 text, got byte 0x{:02x} at offset {}, which "
                               "is not valid UTF-8 there",
                               expected(f), static_cast<unsigned char>(text[bad]), bad));
          return;
        }
        f.set_string(hw_, text);
        break;
      case Kind::dtype:
        if (text == "fp16") {
          f.set_dtype(hw_, isa::DType::f16);
        } else if (text == "fp32") {
          f.set_dtype(hw_, isa::DType::f32);
        } else {
          error(v, fmt::format("expected {}, got {}", expected(f), describe(v.node)));
          return;
        }
        break;
      case Kind::choice: {
        const auto at = std::find(f.choices.begin(), f.choices.end(), text);
        if (at == f.choices.end() || is_quoted_string(v.node)) {
          error(v, fmt::format("expected {}, got {}{}", expected(f), describe(v.node),
                               did_you_mean(text, f.choices)));
          return;
        }
        f.set_int(hw_, at - f.choices.begin());
        break;
      }
      case Kind::integer: {
        std::optional<int64_t> value = read_integer(f, v);
        if (!value) return;
        f.set_int(hw_, *value);
        break;
      }
      case Kind::number: {
        std::optional<double> value = read_number(f, v);
        if (!value) return;
        f.set_number(hw_, *value);
        break;
      }
    }
    valid_.emplace(v.key, v);
  }

  std::optional<int64_t> read_integer(const Field& f, const Value& v) {
    const std::string& text = v.node.Scalar();
    const std::string want = expected(f);
    if (is_quoted_string(v.node)) {
      error(v, fmt::format("expected {}, got {} (write the number without quotes)", want,
                           describe(v.node)));
      return std::nullopt;
    }
    const std::string digits = text.substr(
        text.find_first_not_of("+-") == std::string::npos ? 0 : text.find_first_not_of("+-"));
    if (std::regex_match(text, integer_syntax()) && digits.size() > 1 && digits[0] == '0') {
      error(v, fmt::format("expected {}, got {}: write integers without leading zeros (YAML 1.1 "
                           "reads them as octal)",
                           want, text));
      return std::nullopt;
    }
    if (!std::regex_match(text, integer_syntax())) {
      if (std::regex_match(text, number_syntax()) || is_special_number_text(text)) {
        error(v, fmt::format("expected {}, got {}, which is not an integer", want, text));
      } else if (is_bool_text(text)) {
        error(v, fmt::format("expected {}, got the boolean {}", want, text));
      } else {
        error(v, fmt::format("expected {}, got {}", want, describe(v.node)));
      }
      return std::nullopt;
    }
    const char* begin = text.data() + (text[0] == '+' ? 1 : 0);
    int64_t value = 0;
    const auto [end, ec] = std::from_chars(begin, text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size()) {
      error(v, fmt::format("expected {}, got {}, which is out of range", want, text));
      return std::nullopt;
    }
    if (value > f.max_int && (f.max_int == kIntMax || f.max_int == kInt64Max)) {
      error(v, fmt::format("expected {}, got {}, which is above the largest supported value {}",
                           want, value, f.max_int));
      return std::nullopt;
    }
    if (value < f.min_int || value > f.max_int) {
      error(v, fmt::format("expected {}, got {}", want, value));
      return std::nullopt;
    }
    if (f.power_of_two && (value & (value - 1)) != 0) {
      error(v, fmt::format("expected {}, got {}, which is not a power of two", want, value));
      return std::nullopt;
    }
    if (value % f.multiple_of != 0) {
      error(v, fmt::format("expected {}, got {}, which is not a multiple of {}", want, value,
                           f.multiple_of));
      return std::nullopt;
    }
    return value;
  }

  std::optional<double> read_number(const Field& f, const Value& v) {
    const std::string& text = v.node.Scalar();
    const std::string want = expected(f);
    if (is_quoted_string(v.node) || !std::regex_match(text, number_syntax())) {
      error(v, fmt::format("expected {}, got {}", want, describe(v.node)));
      return std::nullopt;
    }
    const char* begin = text.data() + (text[0] == '+' ? 1 : 0);
    double value = 0;
    const auto [end, ec] = std::from_chars(begin, text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
      error(v, fmt::format("expected {}, got {}, which is out of range", want, text));
      return std::nullopt;
    }
    if (!(value > 0) || value > f.max_number) {
      error(v, fmt::format("expected {}, got {}", want, text));
      return std::nullopt;
    }
    return value;
  }

  /// A note naming the --hw-set options that set any of `keys` (appended to cross-key errors).
  std::string override_note(std::initializer_list<const char*> keys) const {
    std::string note;
    for (const char* k : keys) {
      const Value& v = valid_.at(k);
      if (v.override_ != nullptr)
        note += fmt::format("{}{} was set by --hw-set {}={}", note.empty() ? " [" : "; ", k,
                            v.override_->key, v.override_->value);
    }
    return note.empty() ? note : note + "]";
  }

  /// The buffer sizes must hold the smallest tile the compiler emits, as far as the config alone
  /// decides it (what a model's layers add -- a kernel window, a reduction axis kept whole -- is
  /// checked when the layer is tiled, passes/loop/tile_cube.cpp, tile_vector.cpp): two cube
  /// fractals per L0 buffer (the compiler double-buffers by default: L0A/L0B/L0C hold two copies
  /// of every tile; passes/loop/double_buffer.cpp), one A and one B fractal in L1, and in UB one
  /// C fractal (FIX moves L0C -> UB) and four vector widths (two operands and a result, double
  /// buffered, need at least that much).
  void check_minimum_tiles() {
    const CubeConfig& cube = hw_.core.cube;
    const BuffersConfig& buf = hw_.core.buffers_bytes;
    const int in_bytes = isa::dtype_bytes(cube.input_dtype);
    const int acc_bytes = isa::dtype_bytes(cube.acc_dtype);
    const char* in_name = cube.input_dtype == isa::DType::f16 ? "fp16" : "fp32";
    const char* acc_name = cube.acc_dtype == isa::DType::f16 ? "fp16" : "fp32";
    const int64_t a = int64_t{cube.m} * cube.k * in_bytes;
    const int64_t b = int64_t{cube.k} * cube.n * in_bytes;
    const int64_t c = int64_t{cube.m} * cube.n * acc_bytes;
    const int64_t vec4 = int64_t{4} * hw_.core.vector.width_bytes;

    if (acc_bytes < in_bytes) {
      error(valid_.at("core.cube.acc_dtype"),
            fmt::format("accumulating in {} is narrower than the {} inputs; expected acc_dtype at "
                        "least as wide as input_dtype{}",
                        acc_name, in_name,
                        override_note({"core.cube.acc_dtype", "core.cube.input_dtype"})));
    }
    // Double buffering keeps two copies of every L0 tile: the smallest is one fractal each.
    struct L0 {
      const char *key, *buffer;
      int64_t have;
      int rows, cols;
      const char *rows_key, *cols_key, *dtype_name;
      int dtype_bytes;
      const char* dtype_key;
    };
    const L0 l0s[] = {{"core.buffers_bytes.l0a", "L0A", buf.l0a, cube.m, cube.k, "core.cube.m",
                       "core.cube.k", in_name, in_bytes, "core.cube.input_dtype"},
                      {"core.buffers_bytes.l0b", "L0B", buf.l0b, cube.k, cube.n, "core.cube.k",
                       "core.cube.n", in_name, in_bytes, "core.cube.input_dtype"},
                      {"core.buffers_bytes.l0c", "L0C", buf.l0c, cube.m, cube.n, "core.cube.m",
                       "core.cube.n", acc_name, acc_bytes, "core.cube.acc_dtype"}};
    for (const L0& l : l0s) {
      const int64_t need = 2 * int64_t{l.rows} * l.cols * l.dtype_bytes;
      if (l.have >= need) continue;
      error(valid_.at(l.key),
            fmt::format("{} bytes cannot hold two {}x{} {} {} fractals (two: the compiler "
                        "double-buffers L0A/L0B/L0C, and its smallest tile is one fractal; 2 x {} "
                        "x {} x {} bytes = {} bytes); expected >= {}{}",
                        l.have, l.rows, l.cols, l.dtype_name, l.buffer, l.rows_key, l.cols_key,
                        l.dtype_bytes, need, need,
                        override_note({l.key, l.rows_key, l.cols_key, l.dtype_key})));
    }
    // The int8 mode's fractals (core.cube.int8: i8/u8 operands, int32 accumulators) obey the
    // same two-per-L0-buffer rule.
    if (cube.int8.m > 0) {
      const CubeFractal f = cube.int8;
      const struct {
        const char *key, *buffer;
        int64_t have, need;
        const char* what;
      } i8s[] = {
          {"core.buffers_bytes.l0a", "L0A", buf.l0a, 2 * int64_t{f.m} * f.k, "int8 m x k"},
          {"core.buffers_bytes.l0b", "L0B", buf.l0b, 2 * int64_t{f.k} * f.n, "int8 k x n"},
          {"core.buffers_bytes.l0c", "L0C", buf.l0c, 2 * int64_t{f.m} * f.n * 4, "int32 m x n"}};
      for (const auto& l : i8s) {
        if (l.have >= l.need) continue;
        error(valid_.at(l.key),
              fmt::format("{} bytes cannot hold two {} {} fractals of core.cube.int8 ({}x{}x{}: "
                          "{} bytes); expected >= {}{}",
                          l.have, l.what, l.buffer, f.m, f.k, f.n, l.need, l.need,
                          override_note({l.key, "core.cube.int8.m", "core.cube.int8.k",
                                         "core.cube.int8.n"})));
      }
    }
    if (buf.ub < std::max(c, vec4)) {
      error(valid_.at("core.buffers_bytes.ub"),
            fmt::format("{} bytes cannot hold one {}x{} {} L0C fractal ({} bytes) and 4 vector "
                        "widths (4 x {} = {} bytes); expected >= {}{}",
                        buf.ub, cube.m, cube.n, acc_name, c, hw_.core.vector.width_bytes, vec4,
                        std::max(c, vec4),
                        override_note({"core.buffers_bytes.ub", "core.cube.m", "core.cube.n",
                                       "core.cube.acc_dtype", "core.vector.width_bytes"})));
    }
    if (buf.l1 < a + b) {
      error(valid_.at("core.buffers_bytes.l1"),
            fmt::format("{} bytes cannot hold one L0A fractal and one L0B fractal ({} + {} = {} "
                        "bytes); expected >= {}{}",
                        buf.l1, a, b, a + b, a + b,
                        override_note({"core.buffers_bytes.l1", "core.cube.m", "core.cube.k",
                                       "core.cube.n", "core.cube.input_dtype"})));
    }
  }

  /// `tech` names a technology table that loads (npu_model/area_energy.h). A relative path is
  /// taken relative to the config file's directory when the value is written in a file, to the
  /// working directory when it comes from --hw-set (or the source is not a file); it is stored
  /// absolute, so that hw_config_to_yaml's output selects the same table from anywhere.
  void check_tech_table() {
    if (hw_.tech.empty()) return;
    const Value& v = valid_.at("tech");
    std::filesystem::path path(hw_.tech);
    if (path.is_relative() && v.override_ == nullptr) {
      std::error_code ec;
      if (std::filesystem::is_regular_file(source_, ec))
        path = std::filesystem::path(source_).parent_path() / path;
    }
    path = std::filesystem::absolute(path).lexically_normal();
    try {
      cached_tech_table(path.string());
    } catch (const Error& e) {
      error(v, fmt::format("cannot use the technology table '{}' ({}): {}", hw_.tech, path.string(),
                           e.what()));
      return;
    }
    hw_.tech = path.string();
  }

  /// Cross-key checks of the banked DRAM model (memory.dram.banked): the burst it moves is the
  /// compiler's burst, the timings are ordered as JEDEC states them (a row stays open at least
  /// until it can be read: tRAS >= tRCD; same-group spacing at least the different-group one),
  /// the address mapping covers the geometry and the geometry holds the capacity.
  void check_banked_dram() {
    const DramBankedConfig& b = hw_.dram.banked;
    const DramTimingConfig& t = b.timing;
    const std::string k = "memory.dram.banked.";
    const int64_t burst = dram_burst_bytes(b);
    if (burst != hw_.dram.burst_bytes)
      error(valid_.at("memory.dram.burst_bytes"),
            fmt::format("{} bytes, but the banked model's burst is bus_width_bits / 8 x "
                        "burst_length = {} / 8 x {} = {} bytes; expected {} (the compiler rounds "
                        "GM accesses to the bursts the DRAM moves){}",
                        hw_.dram.burst_bytes, b.bus_width_bits, b.burst_length, burst, burst,
                        override_note({"memory.dram.burst_bytes"})));
    if (b.burst_length < b.transfers_per_ck)
      error(valid_.at(k + "burst_length"),
            fmt::format("BL{} is shorter than one tCK of data (transfers_per_ck = {}); expected "
                        "burst_length >= transfers_per_ck",
                        b.burst_length, b.transfers_per_ck));
    if (b.row_bytes < burst)
      error(valid_.at(k + "row_bytes"),
            fmt::format("{} bytes is less than one {}-byte burst; expected >= {}", b.row_bytes,
                        burst, burst));
    struct Order {
      const char *small, *large;
      int a, c;
      const char* why;
    };
    const Order orders[] = {
        {"tRCD", "tRAS", t.tRCD, t.tRAS, "a row must stay open until it can be read"},
        {"tRRD_S", "tRRD_L", t.tRRD_S, t.tRRD_L, "same-bank-group spacing is the longer one"},
        {"tCCD_S", "tCCD_L", t.tCCD_S, t.tCCD_L, "same-bank-group spacing is the longer one"},
        {"tRRD_L", "tFAW", t.tRRD_L, t.tFAW, "the four-activate window spans several ACTs"},
        {"tRFC", "tREFI", t.tRFC, t.tREFI, "a refresh must end before the next one is due"}};
    for (const Order& o : orders)
      if (o.c < o.a || (o.c == o.a && std::string(o.large) == "tREFI"))
        error(valid_.at(k + "timing_ck." + o.large),
              fmt::format("{} = {} nCK is {} {} = {} nCK ({}); expected {} {} {}", o.large, o.c,
                          o.c < o.a ? "less than" : "equal to", o.small, o.a, o.why, o.large,
                          std::string(o.large) == "tREFI" ? ">" : ">=", o.small));
    if (!errors_.empty()) return;
    try {
      DramAddressMap map(b);
    } catch (const Error& e) {
      error(valid_.at(k + "address_mapping"), e.what());
      return;
    }
    const int64_t geometry = dram_geometry_bytes(b);
    if (hw_.dram.capacity_bytes > geometry)
      error(valid_.at("memory.dram.capacity_bytes"),
            fmt::format("{} bytes, more than the banked geometry addresses (channels x ranks x "
                        "bank_groups x banks_per_group x rows x row_bytes = {} x {} x {} x {} x {} "
                        "x {} = {} bytes); expected <= {}",
                        hw_.dram.capacity_bytes, b.channels, b.ranks, b.bank_groups,
                        b.banks_per_group, b.rows, b.row_bytes, geometry, geometry));
  }

  /// memory.l2: the capacity must be a whole number of sets (line_bytes x ways bytes each).
  void check_l2() {
    const L2Config& l2 = hw_.l2;
    if (!l2.enabled()) return;
    const int64_t set_bytes = int64_t{l2.line_bytes} * l2.ways;
    if (l2.capacity_bytes % set_bytes != 0) {
      error(valid_.at("memory.l2.capacity_bytes"),
            fmt::format("{} bytes is not a whole number of sets of line_bytes x ways = {} x {} = "
                        "{} bytes; expected a multiple of {}{}",
                        l2.capacity_bytes, l2.line_bytes, l2.ways, set_bytes, set_bytes,
                        override_note({"memory.l2.capacity_bytes"})));
    }
  }

  void derive() {
    DerivedConfig& d = hw_.derived;
    const CubeConfig& cube = hw_.core.cube;
    d.cube_macs_per_cycle = int64_t{cube.m} * cube.k * cube.n;
    d.chip_flops_per_cycle = 2 * d.cube_macs_per_cycle * hw_.cores;
    // FLOP/cycle * 1e9 cycle/s per GHz / 1e12 FLOP/s per TFLOPS.
    d.peak_tflops = static_cast<double>(d.chip_flops_per_cycle) * hw_.clock_ghz / 1000.0;
    d.vector_fp16_elems_per_cycle = hw_.core.vector.width_bytes / 2;
    d.vector_fp32_elems_per_cycle = hw_.core.vector.width_bytes / 4;
    d.dram_gb_per_s = hw_.dram.bytes_per_cycle * hw_.clock_ghz;  // B/cycle * 1e9 cycle/s / 1e9
    d.a_fractal_bytes = int64_t{cube.m} * cube.k * isa::dtype_bytes(cube.input_dtype);
    d.b_fractal_bytes = int64_t{cube.k} * cube.n * isa::dtype_bytes(cube.input_dtype);
    d.c_fractal_bytes = int64_t{cube.m} * cube.n * isa::dtype_bytes(cube.acc_dtype);
    d.ridge_flops_per_dram_byte =
        static_cast<double>(d.chip_flops_per_cycle) / hw_.dram.bytes_per_cycle;
    const CubeFractal i8 = cube.int8_fractal();
    d.cube_int8_macs_per_cycle = int64_t{i8.m} * i8.k * i8.n;
    d.chip_int8_ops_per_cycle = 2 * d.cube_int8_macs_per_cycle * hw_.cores;
    d.peak_int8_tops = static_cast<double>(d.chip_int8_ops_per_cycle) * hw_.clock_ghz / 1000.0;
  }

  std::string source_;       // the file being visited (an included section's file inside it)
  std::string root_source_;  // the hardware config file
  std::map<std::string, PreparedOverride> overrides_;
  std::map<std::string, Value> valid_;  // leaves that passed their own checks
  std::vector<Problem> errors_;
  HwConfig hw_;
};

void emit_section(YAML::Emitter& out, const Field& f, const HwConfig& hw) {
  out << YAML::BeginMap;
  for (const Field& c : f.children) {
    // An absent optional string (tech) stays absent, so the text reads back to the same config.
    if (c.kind == Kind::string && c.optional && c.get_string(hw).empty()) continue;
    if (c.present != nullptr && !c.present(hw)) continue;  // an absent optional section
    if (c.written_when && !c.written_when(hw))
      continue;  // an optional section the config does not have
    // memory.dram.model at its default (simple) is not written, as memory.multicast (none, its
    // written_when): a config that does not use the key has the text, and so the hash, it had
    // before the key existed (tuning logs are keyed by that hash).
    if (c.kind == Kind::string && c.optional && !c.choices.empty() &&
        c.get_string(hw) == c.default_string)
      continue;
    out << YAML::Key << c.name << YAML::Value;
    switch (c.kind) {
      case Kind::section:
        emit_section(out, c, hw);
        break;
      case Kind::integer:
        out << c.get_int(hw);
        break;
      case Kind::number: {
        // Shortest exact, always with a '.' or an exponent, so that the text reads back as a
        // number, not an integer (reports type their values from it).
        std::string text = fmt::format("{}", c.get_number(hw));
        if (text.find_first_of(".eE") == std::string::npos) text += ".0";
        out << text;
        break;
      }
      case Kind::string:
        out << YAML::DoubleQuoted << c.get_string(hw);
        break;
      case Kind::dtype:
        out << (c.get_dtype(hw) == isa::DType::f16 ? "fp16" : "fp32");
        break;
      case Kind::choice:
        out << c.choices.at(static_cast<size_t>(c.get_int(hw)));
        break;
    }
  }
  out << YAML::EndMap;
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

}  // namespace

HwConfig parse_hw_config(const std::string& yaml_text, const std::string& source_name,
                         const std::vector<HwOverride>& overrides) {
  return Loader(source_name).run(yaml_text, overrides);
}

HwConfig load_hw_config(const std::string& path, const std::vector<HwOverride>& overrides) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) {
    fail(
        "{}: cannot read hardware config: no such file (expected a YAML file such as "
        "hw_configs/npu_4core.yaml)",
        path);
  }
  if (!std::filesystem::is_regular_file(status)) {
    fail("{}: cannot read hardware config: not a regular file (expected a YAML file)", path);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot read hardware config: {}", path, std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) fail("{}: cannot read hardware config: {}", path, std::strerror(errno));
  return parse_hw_config(text.str(), path, overrides);
}

HwOverride parse_hw_override(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos) {
    const std::vector<std::string> keys = hw_config_keys();
    const std::string key = trim(text);
    if (std::find(keys.begin(), keys.end(), key) != keys.end())
      fail("--hw-set {}: the value is missing: write --hw-set {}=VALUE (one argument, KEY=VALUE)",
           text, key);
    fail(
        "--hw-set {}: expected KEY=VALUE as one argument, where KEY is a config key as "
        "docs/hw_config.md lists them (e.g. cores=8, core.buffers_bytes.ub=131072){}",
        text, did_you_mean(key, keys));
  }
  HwOverride ov{trim(text.substr(0, eq)), trim(text.substr(eq + 1))};
  if (ov.key.empty()) fail("--hw-set {}: the key before '=' is empty; expected KEY=VALUE", text);
  if (ov.value.empty()) fail("--hw-set {}: the value after '=' is empty; expected KEY=VALUE", text);
  size_t begin = 0;
  while (true) {
    const size_t dot = ov.key.find('.', begin);
    const std::string part = ov.key.substr(begin, dot == std::string::npos ? dot : dot - begin);
    if (part.empty() || part.find_first_of(" \t") != std::string::npos) {
      fail(
          "--hw-set {}: '{}' is not a dotted key; expected names separated by single dots, "
          "e.g. core.dma.mte2.bytes_per_cycle",
          text, ov.key);
    }
    if (dot == std::string::npos) break;
    begin = dot + 1;
  }
  return ov;
}

std::vector<std::string> hw_config_keys() {
  std::vector<std::string> keys;
  collect_keys(schema(), "", keys);
  return keys;
}

std::string hw_config_to_yaml(const HwConfig& hw) {
  YAML::Emitter out;
  emit_section(out, schema(), hw);
  return std::string(out.c_str()) + "\n";
}

void finalize_hw_config(HwConfig& hw) {
  const std::string source = hw.source_file;
  hw = parse_hw_config(hw_config_to_yaml(hw), "<HwConfig built in code>");
  hw.source_file = source;
}

namespace yaml_support {

YAML::Node load_document(const std::string& text, const std::string& source, YAML::Mark& second) {
  return load_first_document(text, source, second);
}
std::string where(const std::string& source, const YAML::Mark& mark) {
  return mark_text(source, mark);
}
std::string describe_node(const YAML::Node& node) { return describe(node); }
bool is_quoted(const YAML::Node& node) { return is_quoted_string(node); }
bool is_number_text(const std::string& text) { return std::regex_match(text, number_syntax()); }

}  // namespace yaml_support

}  // namespace tessel::npu

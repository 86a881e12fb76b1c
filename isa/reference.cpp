// The generated tables of docs/isa.md, written from the instruction records and operand classes
// (isa/instruction_list.h, isa/operand_classes.h) with the same rules the assembler
// (isa/asm.cpp) and the encoder (isa/encoding.cpp) apply to them.
#include "isa/reference.h"

#include <fmt/format.h>

#include <vector>

#include "isa/operand_classes.h"

namespace tessel::isa {

namespace {

namespace oc = opclass;

template <class D>
using kind_of = typename std::decay_t<D>::kind_type;

// The text of a default value in `[, key=default]`.
template <class K, class T>
std::string default_text(const T& v) {
  if constexpr (std::is_same_v<K, oc::kind::Bool>) {
    return v ? "1" : "0";
  } else if constexpr (std::is_arithmetic_v<T>) {
    return fmt::format("{}", +v);
  } else if constexpr (std::is_same_v<T, DType>) {
    return dtype_name(v);
  } else if constexpr (std::is_same_v<T, MemRef>) {
    return fmt::format("{}[x{}+{}]", scope_name(v.scope), v.reg, v.offset);
  } else {
    return "..";
  }
}

void append(std::string& list, const std::string& item) {
  if (item.empty()) return;
  if (!list.empty()) list += ", ";
  list += item;
}

// One table row before grouping: the mnemonic apart, everything a row shows.
struct Row {
  std::string mnemonic, cls, pipe, syntax, reads, writes;
  bool same_as(const Row& o) const {
    return cls == o.cls && pipe == o.pipe && syntax == o.syntax && reads == o.reads &&
           writes == o.writes;
  }
};

template <class A>
Row instruction_row(const InstrInfo& r) {
  using Desc = oc::ClassDesc<A>;
  Row row;
  row.mnemonic = r.mnemonic;
  row.cls = args_class_name(r.cls);
  switch (r.pipe_rule) {
    case PipeRule::fixed:
      row.pipe = pipe_name(r.pipe);
      break;
    case PipeRule::by_flag:
      row.pipe = r.kind == InstrKind::set_flag ? "SRC" : "DST";
      break;
    case PipeRule::by_direction:
      row.pipe = "mte2 from gm, else mte3";
      break;
  }
  std::string positional, keyed;
  oc::for_each_field_indexed<A>([&](const auto& d, int i) {
    using K = kind_of<decltype(d)>;
    if (!oc::field_used(r.op, i)) return;
    // The operand's role.
    std::string what = d.placeholder();
    if constexpr (oc::kIsMemory<K>) {
      if constexpr (requires { Desc::scope_pairs; }) {
        // A dma-class instruction fixed on MTE2 (dma_mc) takes the pairs that read GM only.
        const bool gm_only = r.pipe_rule == PipeRule::fixed && r.pipe == Pipe::mte2;
        if (d.access == oc::Access::write) {
          std::string pairs;
          for (const auto& [s, t] : Desc::scope_pairs)
            if (!gm_only || s == Scope::gm)
              append(pairs, fmt::format("{}→{}", scope_name(s), scope_name(t)));
          what += " (" + pairs + ")";
        } else {
          what += " (" +
                  (gm_only ? std::string(scope_name(Scope::gm)) : oc::scope_list(d.allowed, ", ")) +
                  ")";
        }
      } else {
        what += " (" + oc::scope_list(d.allowed, ", ") + ")";
      }
    }
    const bool is_dst = d.text == oc::Text::operand && positional.empty();
    switch (d.access) {
      case oc::Access::read:
        append(row.reads, what);
        break;
      case oc::Access::write: {
        std::string w = what;
        if (is_dst && r.reduction) w.insert(w.size() - 1, ", one element per repeat");
        append(row.writes, w);
        if (is_dst && r.reads_dst) append(row.reads, what);
        break;
      }
      case oc::Access::write_acc:
        append(row.writes, what);
        append(row.reads, what.substr(0, what.size() - 1) + ", when acc=1)");
        break;
      case oc::Access::none:
        break;
    }
    // The operand in the syntax.
    if (d.text == oc::Text::operand) {
      append(positional, d.placeholder());
    } else if constexpr (std::is_same_v<K, oc::kind::DmaDims>) {
      keyed += ", extent=[..], dst_stride=[..], src_stride=[..] [, valid=[b:e,..]]";
    } else if constexpr (std::is_same_v<K, oc::kind::DmaNdims>) {
      keyed += " [, ndims=n]";
    } else if (d.text == oc::Text::required) {
      keyed += fmt::format(", {}=", field_name(d.name));
    } else if (d.text == oc::Text::optional) {
      keyed += fmt::format(" [, {}={}]", field_name(d.name),
                           default_text<K>(d.get(oc::kDefaultArgs<A>)));
    }
  });
  bool suffix = false;
  oc::for_each_field<A>([&](const auto& d) { suffix = suffix || d.text == oc::Text::suffix; });
  row.syntax = std::string(r.mnemonic) + (suffix ? ".T" : "");
  if (!positional.empty()) row.syntax += " " + positional;
  if (!keyed.empty()) row.syntax += positional.empty() ? keyed.substr(1) : keyed;
  if (row.reads.empty()) row.reads = "—";
  if (row.writes.empty()) row.writes = "—";
  return row;
}

// The syntax with the first mnemonic replaced, for comparing rows of different opcodes.
std::string syntax_without(const Row& r) { return r.syntax.substr(r.mnemonic.size()); }

template <class A>
std::string compact_layout(const InstrInfo& r) {
  std::string out;
  int dims_bit = 0;  // where dma's dims flag bits start
  // The flag byte.
  if constexpr (oc::flag_byte_bits<A>() > 0) {
    std::string bits;
    int bit = 0;
    auto range = [](int lo, int n) {
      return n == 1 ? fmt::format("bit {}", lo) : fmt::format("bits {}–{}", lo, lo + n - 1);
    };
    oc::for_each_field<A>([&](const auto& d) {
      using K = kind_of<decltype(d)>;
      if constexpr (std::is_same_v<K, oc::kind::DmaDims>) {
        dims_bit = bit;
        append(bits, fmt::format("{} ndims−1, {} valid window present", range(bit, 2),
                                 range(bit + 2, 1)));
      } else if constexpr (K::flag_bits > 0) {
        append(bits, fmt::format("{} {}", range(bit, K::flag_bits), field_name(d.name)));
      }
      bit += K::flag_bits;
    });
    for (int g = 1; g <= oc::num_groups<A>(); ++g) {
      std::string members;
      oc::for_each_field<A>([&](const auto& d) {
        if (d.group == g) append(members, field_name(d.name));
      });
      append(bits, fmt::format("bit {} {} present", bit++, members));
    }
    out = fmt::format("flags u8 ({})", bits);
  }
  // The payload: group 0 fields, and each optional group's run.
  int open_group = 0;
  std::string group_fields, group_defaults;
  auto close_group = [&] {
    if (open_group == 0) return;
    int bit = oc::flag_field_bits<A>() + open_group - 1;
    append(out, fmt::format("if bit {}: {} (absent: {})", bit, group_fields, group_defaults));
    open_group = 0;
    group_fields.clear();
    group_defaults.clear();
  };
  oc::for_each_field_compact<A>([&](const auto& d, int i) {
    using K = kind_of<decltype(d)>;
    if constexpr (K::compact != oc::kind::Wire::none) {
      if (!oc::field_used(r.op, i)) return;
      std::string item;
      if constexpr (std::is_same_v<K, oc::kind::DmaDims>) {
        item = fmt::format(
            "per dim: extent uv, dst_stride sv, src_stride sv; if bit {}: per dim valid_begin uv, "
            "valid_end uv (absent: the full window)",
            dims_bit + 2);
      } else if constexpr (oc::kIsMemory<K>) {
        item = field_name(d.name);
      } else {
        item = fmt::format("{} {}", field_name(d.name), oc::kind::wire_name(K::compact));
      }
      if (d.group != open_group) close_group();
      if (d.group == 0) {
        append(out, item);
      } else {
        open_group = d.group;
        append(group_fields, item);
        append(group_defaults, default_text<K>(d.get(oc::kDefaultArgs<A>)));
      }
    }
  });
  close_group();
  return out.empty() ? "nothing" : out;
}

// Rows grouped: opcodes whose rows are equal share one row (at the first one's place) listing all
// their mnemonics.
template <class RowFn>
std::vector<std::vector<std::string>> grouped(RowFn&& row_of) {
  std::vector<std::string> keys;
  std::vector<std::vector<std::string>> rows;
  for (const InstrInfo& r : kInstructions) {
    auto [key, cells] = row_of(r);
    std::size_t i = 0;
    while (i < keys.size() && keys[i] != key) ++i;
    if (i < keys.size()) {
      rows[i][0] += fmt::format(" {}", r.mnemonic);
      continue;
    }
    cells.insert(cells.begin(), r.mnemonic);
    keys.push_back(key);
    rows.push_back(std::move(cells));
  }
  return rows;
}

}  // namespace

std::string instruction_table_markdown() {
  const auto rows = grouped([](const InstrInfo& r) {
    const Row row = oc::with_class(
        r.cls, [&](auto t) { return instruction_row<typename decltype(t)::type>(r); });
    const std::string key =
        row.cls + "|" + row.pipe + "|" + syntax_without(row) + "|" + row.reads + "|" + row.writes;
    return std::make_pair(
        key, std::vector<std::string>{row.cls, row.pipe, row.syntax, row.reads, row.writes});
  });
  std::string table;
  for (const auto& cells : rows) {
    table += fmt::format("| `{}` | `{}` | {} | `{}` | {} | {} |\n", cells[0], cells[1], cells[2],
                         cells[3], cells[4], cells[5]);
  }
  return "| instruction | class | pipe | syntax (positional operands, then fields) | reads | "
         "writes "
         "|\n|---|---|---|---|---|---|\n" +
         table;
}

std::string compact_form_table_markdown() {
  const auto rows = grouped([](const InstrInfo& r) {
    const std::string layout = oc::with_class(
        r.cls, [&](auto t) { return compact_layout<typename decltype(t)::type>(r); });
    return std::make_pair(layout, std::vector<std::string>{layout});
  });
  std::string out = "| opcodes | compact operands |\n|---|---|\n";
  for (const auto& cells : rows) out += fmt::format("| `{}` | {} |\n", cells[0], cells[1]);
  return out;
}

bool replace_generated_block(std::string& document, const std::string& name,
                             const std::string& body) {
  const std::string begin = "<!-- " + name + ":begin -->\n", end = "<!-- " + name + ":end -->";
  const std::size_t b = document.find(begin);
  if (b == std::string::npos) return false;
  const std::size_t e = document.find(end, b + begin.size());
  if (e == std::string::npos) return false;
  document.replace(b + begin.size(), e - (b + begin.size()), body);
  return true;
}

std::string generated_block(const std::string& document, const std::string& name) {
  const std::string begin = "<!-- " + name + ":begin -->\n", end = "<!-- " + name + ":end -->";
  const std::size_t b = document.find(begin);
  if (b == std::string::npos) return "";
  const std::size_t e = document.find(end, b + begin.size());
  if (e == std::string::npos) return "";
  return document.substr(b + begin.size(), e - (b + begin.size()));
}

}  // namespace tessel::isa

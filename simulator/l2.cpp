// Shared L2: set-associative LRU lookup, bank timing, DRAM fills/write-backs, the functional copy.
#include "simulator/l2.h"

#include <algorithm>
#include <bit>

#include "compiler/support/error.h"
#include "npu_model/timing.h"
#include "simulator/run_state.h"

namespace tessel::sim {

L2::L2(sc_core::sc_module_name name, RunState& run, Dram& dram)
    : sc_core::sc_module(name),
      dram_socket("dram_socket"),
      core_target_(this,
                   [](void* l2, tlm::tlm_generic_payload& t, sc_core::sc_time& delay) {
                     static_cast<L2*>(l2)->b_transport(0, t, delay);
                   }),
      run_(run),
      dram_(dram),
      cfg_(run.hw->l2) {
  const int64_t line = cfg_.line_bytes;
  if (!cfg_.enabled() || line < 1 || (line & (line - 1)) != 0 || cfg_.ways < 1 || cfg_.banks < 1 ||
      cfg_.bytes_per_cycle < 1 || cfg_.latency_cycles < 0 ||
      cfg_.capacity_bytes % (line * cfg_.ways) != 0)
    fail(
        "hardware config: memory.l2 is inconsistent (capacity_bytes {}, line_bytes {}, ways {}, "
        "banks {}, bytes_per_cycle {}, latency_cycles {}); expected the checks of "
        "docs/hw_config.md",
        cfg_.capacity_bytes, cfg_.line_bytes, cfg_.ways, cfg_.banks, cfg_.bytes_per_cycle,
        cfg_.latency_cycles);
  line_shift_ = std::countr_zero(static_cast<uint64_t>(line));
  sets_ = static_cast<uint64_t>(cfg_.sets());
  ways_.assign(sets_ * static_cast<uint64_t>(cfg_.ways), Way{});
  bank_free_cycle_.assign(static_cast<size_t>(cfg_.banks), 0);
  bank_bytes_.assign(static_cast<size_t>(cfg_.banks), 0);
  // The DRAM sees L2's own transfers as byte-typed, 1-D dmas of whole lines.
  isa::DmaArgs a;
  a.dtype = isa::DType::u8;
  a.ndims = 1;
  a.src_stride[0] = a.dst_stride[0] = 1;
  dram_instr_.op = isa::Opcode::dma;
  dram_instr_.args = a;
}

bool L2::access(uint64_t line, bool allocate, Way** way) {
  Way* set = &ways_[(line % sets_) * static_cast<uint64_t>(cfg_.ways)];
  Way* lru = set;  // empty ways have last_use 0, so they are taken first
  for (int w = 0; w < cfg_.ways; ++w) {
    if (set[w].line == line) {
      set[w].last_use = ++clock_;
      *way = &set[w];
      return true;
    }
    if (set[w].last_use < lru->last_use) lru = &set[w];
  }
  *way = nullptr;
  if (!allocate) return false;
  if (lru->line != UINT64_MAX && lru->dirty) victims_.push_back({lru->line, nullptr});
  lru->line = line;
  lru->dirty = false;
  lru->prefetched = false;
  lru->last_use = ++clock_;
  *way = lru;
  return false;
}

uint64_t L2::dram_access(bool read, uint64_t address, uint64_t bytes, uint64_t issue) {
  auto& a = std::get<isa::DmaArgs>(dram_instr_.args);
  a.src = isa::MemRef{read ? isa::Scope::gm : isa::Scope::ub, 0,
                      read ? static_cast<int64_t>(address) : 0};
  a.dst = isa::MemRef{read ? isa::Scope::l1 : isa::Scope::gm, 0,
                      read ? 0 : static_cast<int64_t>(address)};
  a.extent[0] = static_cast<uint32_t>(bytes);
  a.valid_begin[0] = 0;
  a.valid_end[0] = static_cast<uint32_t>(bytes);
  dram_trans_.set_command(read ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND);
  dram_trans_.set_address(address);
  dram_trans_.set_data_ptr(nullptr);
  dram_trans_.set_data_length(static_cast<unsigned int>(bytes));
  dram_trans_.set_streaming_width(static_cast<unsigned int>(bytes));
  dram_trans_.set_byte_enable_ptr(nullptr);
  dram_trans_.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  dram_ext_ = DmaExtension{};
  dram_ext_.instr = &dram_instr_;
  dram_ext_.functional = false;  // L2 performs the request's copy itself
  dram_ext_.core = core_;        // --dram-trace: the core whose request caused the transfer
  dram_trans_.set_extension(&dram_ext_);
  struct ClearExt {
    tlm::tlm_generic_payload& t;
    DmaExtension* x;
    ~ClearExt() { t.clear_extension(x); }
  } clear{dram_trans_, &dram_ext_};
  sc_core::sc_time d = sc_core::sc_time::from_value(issue - run_.kernel.now());
  dram_socket->b_transport(dram_trans_, d);
  if (dram_trans_.get_response_status() != tlm::TLM_OK_RESPONSE)
    internal_fail("L2: Dram returned {}", dram_trans_.get_response_string());
  dram_free_ = std::max(dram_free_, dram_ext_.dram_done_cycle);
  return dram_ext_.dram_done_cycle;
}

DramServed L2::dram_direct(bool read, int core, uint64_t issue) {
  uint64_t burst = 0, bytes = 0;
  const DramServed served = dram_.serve_runs(issue, read, core, direct_runs_, &burst);
  for (const GmRun& r : direct_runs_) bytes += r.bytes;
  (read ? run_.result.dram_read_bytes : run_.result.dram_write_bytes) += bytes;
  run_.result.dram_burst_bytes += burst;
  dram_free_ = std::max(dram_free_, served.accepted_cycle);
  return served;
}

void L2::line_runs(const std::vector<std::pair<uint64_t, Way*>>& lines, int shift,
                   std::vector<GmRun>& runs) {
  runs.clear();
  for (size_t i = 0; i < lines.size();) {
    size_t j = i + 1;
    while (j < lines.size() && lines[j].first == lines[j - 1].first + 1) ++j;
    runs.push_back({lines[i].first << shift, static_cast<uint64_t>(j - i) << shift});
    i = j;
  }
}

void L2::drain_prefetches(uint64_t until) {
  L2Stats& st = run_.result.l2;
  while (!prefetch_.empty()) {
    PrefetchRange& r = prefetch_.front();
    if (r.next >= r.end) {
      prefetch_.pop_front();
      continue;
    }
    const uint64_t s = std::max(dram_free_, r.issue);
    if (s >= until) break;  // the DRAM is not idle before the request that is arriving
    const uint64_t chunk_end =
        std::min(r.end, (r.next / kPrefetchChunkBytes + 1) * kPrefetchChunkBytes);
    misses_.clear();
    victims_.clear();
    for (uint64_t line = r.next >> line_shift_; line <= (chunk_end - 1) >> line_shift_; ++line) {
      Way* way = nullptr;
      if (!access(line, true, &way)) {
        way->prefetched = true;
        misses_.push_back({line, way});
      }
    }
    r.next = chunk_end;
    const int core = r.core;
    if (r.next >= r.end) prefetch_.pop_front();  // r is not used below
    if (misses_.empty()) continue;               // all resident: no DRAM time
    line_runs(misses_, line_shift_, direct_runs_);
    const DramServed fill = dram_direct(true, core, s);
    const uint64_t ready = fill.done_cycle + static_cast<uint64_t>(run_.hw->dram.latency_cycles);
    for (auto& [line, way] : misses_) way->ready_cycle = ready;
    st.fill_bytes += misses_.size() << line_shift_;
    st.prefetch_fill_bytes += misses_.size() << line_shift_;
    if (!victims_.empty()) {
      std::sort(victims_.begin(), victims_.end());
      st.writeback_bytes += victims_.size() << line_shift_;
      line_runs(victims_, line_shift_, direct_runs_);
      dram_direct(false, core, s);  // posted, as a demand request's write-backs
    }
  }
}

void L2::hint(const isa::Instruction& in, int core, uint64_t issue) {
  const auto* h = std::get_if<isa::L2HintArgs>(&in.args);
  if (!h) internal_fail("L2: {} without its operands", isa::opcode_name(in.op));
  L2Stats& st = run_.result.l2;
  drain_prefetches(issue);
  const uint64_t a = static_cast<uint64_t>(h->src.offset), n = h->bytes;
  if (in.op == isa::Opcode::l2_prefetch) {
    ++st.prefetch_requests;
    st.prefetch_bytes += n;
    if (n > 0) prefetch_.push_back({a, a + n, issue, core});
    return;
  }
  ++st.discard_requests;
  const uint64_t line_bytes = uint64_t{1} << line_shift_;
  // Lines wholly inside [a, a + n).
  const uint64_t first = (a + line_bytes - 1) >> line_shift_, end = (a + n) >> line_shift_;
  for (uint64_t line = first; line < end; ++line) {
    Way* way = nullptr;
    if (!access(line, false, &way)) continue;
    st.discarded_bytes += line_bytes;
    if (way->dirty) st.discarded_dirty_bytes += line_bytes;
    *way = Way{};
  }
}

uint64_t L2::dram_lines(bool read, const std::vector<std::pair<uint64_t, Way*>>& lines,
                        uint64_t issue) {
  uint64_t done = issue;
  for (size_t i = 0; i < lines.size();) {
    size_t j = i + 1;
    while (j < lines.size() && lines[j].first == lines[j - 1].first + 1) ++j;
    const uint64_t run_done = dram_access(read, lines[i].first << line_shift_,
                                          static_cast<uint64_t>(j - i) << line_shift_, issue);
    for (size_t k = i; k < j; ++k)
      if (lines[k].second) lines[k].second->ready_cycle = run_done;
    done = std::max(done, run_done);
    i = j;
  }
  return done;
}

void L2::b_transport(int /*id*/, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
  DmaExtension* ext = trans.get_extension<DmaExtension>();
  if (!ext || !ext->instr) internal_fail("L2: transaction without a DmaExtension");
  const uint64_t issue = run_.kernel.now() + delay.value();
  if (ext->instr->op == isa::Opcode::l2_prefetch || ext->instr->op == isa::Opcode::l2_discard) {
    hint(*ext->instr, ext->core, issue);
    ext->dram_done_cycle = issue;
    ext->dram_latency_cycles = 0;
    trans.set_response_status(tlm::TLM_OK_RESPONSE);
    return;
  }
  const auto* dma = std::get_if<isa::DmaArgs>(&ext->instr->args);
  if (!dma) internal_fail("L2: transaction for a non-dma instruction");
  drain_prefetches(issue);  // background fills that start before this request, in DRAM idle time
  core_ = ext->core;
  const bool read = trans.is_read();
  const bool through = !read && cfg_.write_policy == npu::L2WritePolicy::write_through;
  L2Stats& st = run_.result.l2;
  ++st.requests;
  (read ? st.read_bytes : st.write_bytes) += trans.get_data_length();

  // Look every line of the request up once (consecutive runs may share a line).
  misses_.clear();
  victims_.clear();
  std::fill(bank_bytes_.begin(), bank_bytes_.end(), 0);
  uint64_t last_line = UINT64_MAX, hits = 0, lines = 0, ready = issue;
  const uint64_t line_bytes = uint64_t{1} << line_shift_;
  npu::for_each_gm_run(*dma, [&](uint64_t a, uint64_t length) {
    const uint64_t e = a + length;
    for (uint64_t line = a >> line_shift_; line <= (e - 1) >> line_shift_; ++line) {
      const uint64_t lo = std::max(a, line << line_shift_);
      const uint64_t hi = std::min(e, (line << line_shift_) + line_bytes);
      bank_bytes_[line % bank_bytes_.size()] += hi - lo;
      if (line == last_line) continue;
      last_line = line;
      ++lines;
      Way* way = nullptr;
      const bool hit = access(line, !through, &way);
      hits += hit;
      if (hit && way->prefetched) {
        st.prefetch_used_lines += read;
        way->prefetched = false;
      }
      if (hit) ready = std::max(ready, way->ready_cycle);  // a fill still in flight
      if (read) {
        ++(hit ? st.read_hit_lines : st.read_miss_lines);
        if (!hit) misses_.push_back({line, way});
      } else {
        ++(hit ? st.write_hit_lines : st.write_miss_lines);
        if (way && !through) {
          way->dirty = true;
          if (!hit) way->ready_cycle = issue;
        }
      }
    }
  });
  if (hits == lines) ++st.hit_requests;

  // Banks: each streams its share of the request.
  uint64_t done = ready;  // hits on lines whose fill is in flight wait for it
  for (size_t b = 0; b < bank_bytes_.size(); ++b) {
    if (bank_bytes_[b] == 0) continue;
    const uint64_t start = std::max(issue, bank_free_cycle_[b]);
    const uint64_t bpc = static_cast<uint64_t>(cfg_.bytes_per_cycle);
    bank_free_cycle_[b] = start + (bank_bytes_[b] + bpc - 1) / bpc;
    done = std::max(done, bank_free_cycle_[b]);
  }
  // DRAM: fills (sorted, one transfer per run of consecutive lines), then write-backs.
  bool waited_on_dram = false;
  if (!misses_.empty()) {
    std::sort(misses_.begin(), misses_.end());
    st.fill_bytes += misses_.size() << line_shift_;
    done = std::max(done, dram_lines(true, misses_, issue));
    waited_on_dram = true;
  }
  if (!victims_.empty()) {
    std::sort(victims_.begin(), victims_.end());
    st.writeback_bytes += victims_.size() << line_shift_;
    dram_lines(false, victims_, issue);  // posted: the request does not wait for them
  }
  const bool functional = ext->functional;
  if (functional) {
    isa::CoreMemory mem = *ext->memory;
    mem.base[int(isa::Scope::gm)] = run_.gm;
    mem.size[int(isa::Scope::gm)] = run_.gm_bytes;
    isa::execute(*run_.hw, *ext->instr, mem);
  }
  if (through) {  // the write itself goes on to DRAM (bursts rounded there)
    st.writeback_bytes += trans.get_data_length();
    ext->functional = false;
    sc_core::sc_time d = sc_core::sc_time::from_value(issue - run_.kernel.now());
    dram_socket->b_transport(trans, d);
    ext->functional = functional;
    done = std::max(done, ext->dram_done_cycle);
    dram_free_ = std::max(dram_free_, ext->dram_done_cycle);
    waited_on_dram = true;
  }
  ext->dram_done_cycle = done;
  ext->dram_latency_cycles =
      static_cast<uint64_t>(cfg_.latency_cycles) +
      (waited_on_dram ? static_cast<uint64_t>(run_.hw->dram.latency_cycles) : 0);
  delay = sc_core::sc_time::from_value(done - run_.kernel.now());
  trans.set_response_status(tlm::TLM_OK_RESPONSE);
}

void L2::finish() {
  uint64_t dirty = 0;
  for (const Way& w : ways_) dirty += w.line != UINT64_MAX && w.dirty;
  run_.result.l2.dirty_bytes_at_end = dirty << line_shift_;
  for (const PrefetchRange& r : prefetch_) run_.result.l2.prefetch_dropped_bytes += r.end - r.next;
}

}  // namespace tessel::sim

// Loop IR constructors, traversal, rewriting and the text printer.
#include "compiler/loop/loop.h"

#include <fmt/format.h>

#include "compiler/support/error.h"

namespace tessel::loop {

const char* scope_name(MemScope s) {
  switch (s) {
    case MemScope::host:
      return "host";
    case MemScope::gm:
      return "gm";
    case MemScope::l1:
      return "l1";
    case MemScope::l0a:
      return "l0a";
    case MemScope::l0b:
      return "l0b";
    case MemScope::l0c:
      return "l0c";
    case MemScope::ub:
      return "ub";
    case MemScope::shared:
      return "shared";
    case MemScope::local:
      return "local";
  }
  return "?";
}

isa::Scope to_isa_scope(MemScope s) {
  switch (s) {
    case MemScope::gm:
      return isa::Scope::gm;
    case MemScope::l1:
      return isa::Scope::l1;
    case MemScope::l0a:
      return isa::Scope::l0a;
    case MemScope::l0b:
      return isa::Scope::l0b;
    case MemScope::l0c:
      return isa::Scope::l0c;
    case MemScope::ub:
      return isa::Scope::ub;
    case MemScope::host:
    case MemScope::shared:
    case MemScope::local:
      break;
  }
  internal_fail("{} memory has no ISA scope", scope_name(s));
}

const char* for_kind_name(ForKind k) {
  switch (k) {
    case ForKind::serial:
      return "for";
    case ForKind::parallel:
      return "parallel";
    case ForKind::core_bound:
      return "cores";
    case ForKind::pipelined:
      return "pipelined";
    case ForKind::unrolled:
      return "unrolled";
    case ForKind::vectorized:
      return "vectorized";
    case ForKind::gpu_block:
      return "blockIdx.x";
    case ForKind::gpu_thread:
      return "threadIdx.x";
  }
  return "?";
}

const char* gpu_op_name(GpuOp op) {
  switch (op) {
    case GpuOp::barrier:
      return "gpu.barrier";
    case GpuOp::cp_async:
      return "gpu.cp_async";
    case GpuOp::cp_async_commit:
      return "gpu.cp_async_commit";
    case GpuOp::cp_async_wait:
      return "gpu.cp_async_wait";
    case GpuOp::mma_m16n8k16:
      return "gpu.mma_m16n8k16";
  }
  return "?";
}

int64_t BufferNode::span_bytes() const {
  if (shape_numel(shape) == 0) return 0;
  int64_t last = 0;
  for (size_t d = 0; d < shape.size(); ++d) last += (shape[d] - 1) * strides[d];
  return (last + 1) * dtype_size(dtype);
}

std::vector<int64_t> dense_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

Buffer make_buffer(const std::string& name, MemScope scope, DType dtype, Shape shape) {
  auto b = std::make_shared<BufferNode>();
  b->name = name;
  b->scope = scope;
  b->dtype = dtype;
  b->strides = dense_strides(shape);
  b->shape = std::move(shape);
  b->alloc_bytes = b->span_bytes();
  return b;
}

Buffer make_view(const Buffer& storage, const std::string& name, Shape shape,
                 std::vector<int64_t> strides, int64_t elem_offset) {
  TESSEL_CHECK(shape.size() == strides.size(), "view {}: rank mismatch", name);
  auto b = std::make_shared<BufferNode>();
  b->name = name;
  b->scope = storage->scope;
  b->dtype = storage->dtype;
  b->shape = std::move(shape);
  b->strides = std::move(strides);
  b->elem_offset = elem_offset;
  b->base = storage->base ? storage->base : storage;
  TESSEL_CHECK(b->elem_offset >= 0 &&
                   b->elem_offset * dtype_size(b->dtype) + b->span_bytes() <= b->base->alloc_bytes,
               "view {} exceeds its allocation {} ({} + {} > {} bytes)", name, b->base->name,
               b->elem_offset * dtype_size(b->dtype), b->span_bytes(), b->base->alloc_bytes);
  return b;
}

namespace {
Stmt node(StmtKind kind) {
  auto s = std::make_shared<StmtNode>();
  s->kind = kind;
  return s;
}
}  // namespace

Stmt seq(std::vector<Stmt> stmts) {
  auto s = node(StmtKind::Seq);
  for (auto& x : stmts) {
    if (!x) continue;
    if (x->kind == StmtKind::Seq && x->comment.empty()) {
      for (auto& y : x->seq) s->seq.push_back(y);
    } else {
      s->seq.push_back(x);
    }
  }
  return s;
}

Stmt for_loop(Var var, int64_t extent, Stmt body, ForKind kind) {
  TESSEL_CHECK(extent >= 1, "loop {} with extent {}", var->name, extent);
  auto s = node(StmtKind::For);
  s->var = std::move(var);
  s->extent = extent;
  s->body = std::move(body);
  s->for_kind = kind;
  return s;
}

Stmt store(Buffer buffer, std::vector<Expr> indices, Expr value) {
  auto s = node(StmtKind::Store);
  s->buffer = std::move(buffer);
  s->indices = std::move(indices);
  s->value = std::move(value);
  return s;
}

Stmt allocate(Buffer buffer, Stmt body) {
  auto s = node(StmtKind::Allocate);
  s->buffer = std::move(buffer);
  s->body = std::move(body);
  return s;
}

Stmt if_then(Expr cond, Stmt then_body, Stmt else_body) {
  auto s = node(StmtKind::If);
  s->cond = std::move(cond);
  s->body = std::move(then_body);
  s->else_body = std::move(else_body);
  return s;
}

Stmt copy(Region dst, Region src, double pad_value) {
  TESSEL_CHECK(dst.extents == src.extents, "copy {} <- {}: extents differ", dst.buffer->name,
               src.buffer->name);
  auto s = node(StmtKind::Copy);
  s->dst = std::move(dst);
  s->src = std::move(src);
  s->pad_value = pad_value;
  return s;
}

Stmt intrin(isa::Instruction instr, std::vector<IntrinOperand> operands) {
  auto s = node(StmtKind::Intrin);
  s->instr = std::move(instr);
  s->operands = std::move(operands);
  return s;
}

Stmt sync(isa::Instruction instr) {
  auto s = node(StmtKind::Sync);
  s->instr = std::move(instr);
  return s;
}

Stmt gpu_intrin(GpuOp op, std::vector<IntrinOperand> operands, int64_t imm) {
  auto s = node(StmtKind::Gpu);
  s->gpu_op = op;
  s->operands = std::move(operands);
  s->gpu_imm = imm;
  return s;
}

Stmt prefetch(Buffer buffer, std::vector<Expr> indices, int locality) {
  if (locality < 0 || locality > 3)
    internal_fail("prefetch of {}: locality {} is not 0..3", buffer->name, locality);
  auto s = node(StmtKind::Prefetch);
  s->buffer = std::move(buffer);
  s->indices = std::move(indices);
  s->prefetch_locality = locality;
  return s;
}

isa::Pipe stmt_pipe(const StmtNode& s) {
  switch (s.kind) {
    case StmtKind::Copy:
      return s.src.buffer->scope == MemScope::gm ? isa::Pipe::mte2 : isa::Pipe::mte3;
    case StmtKind::Intrin:
    case StmtKind::Sync:
      return s.instr.pipe();
    default:
      internal_fail("stmt_pipe of a non-leaf statement");
  }
}

void stmt_buffers(const StmtNode& s, std::vector<Buffer>* reads, std::vector<Buffer>* writes) {
  if (s.kind == StmtKind::Copy) {
    reads->push_back(s.src.buffer);
    writes->push_back(s.dst.buffer);
  } else if (s.kind == StmtKind::Gpu) {
    if (s.gpu_op == GpuOp::cp_async) {
      writes->push_back(s.operands[0].buffer);
      reads->push_back(s.operands[1].buffer);
    } else if (s.gpu_op == GpuOp::mma_m16n8k16) {
      writes->push_back(s.operands[0].buffer);
      for (const auto& o : s.operands) reads->push_back(o.buffer);
    }
  } else if (s.kind == StmtKind::Intrin) {
    for (size_t i = 0; i < s.operands.size(); ++i) {
      if (!s.operands[i].buffer) continue;
      if (i == 0) {
        writes->push_back(s.operands[i].buffer);
        if (isa::reads_destination(s.instr)) reads->push_back(s.operands[i].buffer);
      } else {
        reads->push_back(s.operands[i].buffer);
      }
    }
  }
}

namespace {

std::string region_text(const Region& r) {
  std::string s = r.buffer->name + "[";
  for (size_t d = 0; d < r.extents.size(); ++d)
    s += fmt::format("{}{}:+{}", d ? ", " : "", to_string(r.starts[d]), r.extents[d]);
  return s + "]";
}

std::string intrin_text(const StmtNode& s) {
  std::string ops;
  for (const auto& o : s.operands) {
    if (!o.buffer) continue;
    ops +=
        fmt::format("{}{}[{}]", ops.empty() ? "" : ", ", o.buffer->name, to_string(o.elem_offset));
  }
  std::string extra;
  const auto& in = s.instr;
  if (const auto* v = std::get_if<isa::VectorArgs>(&in.args)) {
    extra =
        fmt::format(" count={} repeat={} strides=({},{})({},{})({},{}) scalar={}", v->count,
                    v->repeat, v->dst.elem_stride, v->dst.repeat_stride, v->src0.elem_stride,
                    v->src0.repeat_stride, v->src1.elem_stride, v->src1.repeat_stride, v->scalar);
  } else if (const auto* m = std::get_if<isa::MmadArgs>(&in.args)) {
    extra = fmt::format(" m1={} k1={} n1={} acc={}", m->m1, m->k1, m->n1, m->accumulate);
  } else if (const auto* l = std::get_if<isa::Load2dArgs>(&in.args)) {
    extra = fmt::format(" rows={} cols={} stride={} t={}", l->rows, l->cols, l->src_row_stride,
                        l->transpose);
  } else if (const auto* c = std::get_if<isa::Img2colArgs>(&in.args)) {
    extra = fmt::format(" chw=({},{},{}) k=({},{}) s=({},{}) d=({},{}) pad=({},{}) out=({},{})",
                        c->c, c->h, c->w, c->kh, c->kw, c->stride_h, c->stride_w, c->dilation_h,
                        c->dilation_w, c->pad_top, c->pad_left, c->oh, c->ow);
    if (c->c0 > 0) extra += fmt::format(" c0={}", c->c0);
  } else if (const auto* f = std::get_if<isa::FixArgs>(&in.args)) {
    extra = fmt::format(" m={} n={} stride={} relu={}", f->m, f->n, f->dst_row_stride, f->relu);
  }
  return fmt::format("{}.{} {}{}", isa::opcode_name(in.op), isa::pipe_name(in.pipe()), ops, extra);
}

void print(const Stmt& s, int indent, std::string& out) {
  const std::string pad(indent * 2, ' ');
  if (!s) return;
  switch (s->kind) {
    case StmtKind::Seq:
      if (!s->comment.empty()) out += pad + "// " + s->comment + "\n";
      for (const auto& x : s->seq) print(x, indent, out);
      break;
    case StmtKind::For:
      out += fmt::format("{}{} {} in 0..{} {{\n", pad, for_kind_name(s->for_kind), s->var->name,
                         s->extent);
      print(s->body, indent + 1, out);
      if (s->else_body) {  // a core-bound loop's tail iteration
        out += pad + "} tail {\n";
        print(s->else_body, indent + 1, out);
      }
      out += pad + "}\n";
      break;
    case StmtKind::Store: {
      std::string idx;
      for (size_t i = 0; i < s->indices.size(); ++i)
        idx += (i ? ", " : "") + to_string(s->indices[i]);
      out += fmt::format("{}{}[{}] = {}\n", pad, s->buffer->name, idx, to_string(s->value));
      break;
    }
    case StmtKind::Allocate:
      out +=
          fmt::format("{}alloc {}: {} {}{}\n", pad, s->buffer->name, scope_name(s->buffer->scope),
                      dtype_to_string(s->buffer->dtype), shape_to_string(s->buffer->shape));
      print(s->body, indent, out);
      break;
    case StmtKind::If:
      out += fmt::format("{}if {} {{\n", pad, to_string(s->cond));
      print(s->body, indent + 1, out);
      if (s->else_body) {
        out += pad + "} else {\n";
        print(s->else_body, indent + 1, out);
      }
      out += pad + "}\n";
      break;
    case StmtKind::Copy:
      out += fmt::format(
          "{}copy.{} {} <- {}{}{}\n", pad, isa::pipe_name(stmt_pipe(*s)), region_text(s->dst),
          region_text(s->src), s->pad_value != 0 ? fmt::format(" pad={}", s->pad_value) : "",
          s->multicast_cores > 1 ? fmt::format(" multicast={}", s->multicast_cores) : "");
      break;
    case StmtKind::Intrin:
      out += pad + intrin_text(*s) + "\n";
      break;
    case StmtKind::Gpu: {
      std::string ops;
      for (const auto& o : s->operands)
        ops += fmt::format("{}{}[{}]", ops.empty() ? " " : ", ", o.buffer->name,
                           to_string(o.elem_offset));
      const bool imm = s->gpu_op == GpuOp::cp_async || s->gpu_op == GpuOp::cp_async_wait;
      out += fmt::format("{}{}{}{}\n", pad, gpu_op_name(s->gpu_op), ops,
                         imm ? fmt::format(" {}", s->gpu_imm) : "");
      break;
    }
    case StmtKind::Prefetch: {
      std::string idx;
      for (size_t i = 0; i < s->indices.size(); ++i)
        idx += (i ? ", " : "") + to_string(s->indices[i]);
      out += fmt::format(
          "{}prefetch {}[{}]{}\n", pad, s->buffer->name, idx,
          s->prefetch_locality != 3 ? fmt::format(" locality={}", s->prefetch_locality) : "");
      break;
    }
    case StmtKind::Sync: {
      const auto& in = s->instr;
      if (const auto* a = std::get_if<isa::SyncArgs>(&in.args);
          a && (in.op == isa::Opcode::set_flag || in.op == isa::Opcode::wait_flag)) {
        out += fmt::format("{}{} {}->{} ev{}\n", pad, isa::opcode_name(in.op),
                           isa::pipe_name(a->src), isa::pipe_name(a->dst), a->event);
      } else {
        out += fmt::format("{}{}\n", pad, isa::opcode_name(in.op));
      }
      break;
    }
  }
}

}  // namespace

std::string to_string(const Stmt& s) {
  std::string out;
  print(s, 0, out);
  return out;
}

std::string to_string(const Kernel& k) {
  std::string out = "kernel " + k.name + "(";
  for (size_t i = 0; i < k.params.size(); ++i)
    out += fmt::format("{}{}: {}{}", i ? ", " : "", k.params[i]->name,
                       dtype_to_string(k.params[i]->dtype), shape_to_string(k.params[i]->shape));
  out += ") {\n";
  print(k.body, 1, out);
  return out + "}\n";
}

void visit_stmt(const Stmt& s, const std::function<void(const Stmt&)>& fn) {
  if (!s) return;
  fn(s);
  for (const auto& x : s->seq) visit_stmt(x, fn);
  visit_stmt(s->body, fn);
  visit_stmt(s->else_body, fn);
}

Stmt rewrite_stmt(const Stmt& s, const std::function<Stmt(const Stmt&)>& fn) {
  if (!s) return s;
  auto copy_node = std::make_shared<StmtNode>(*s);
  for (auto& x : copy_node->seq) x = rewrite_stmt(x, fn);
  copy_node->body = rewrite_stmt(copy_node->body, fn);
  copy_node->else_body = rewrite_stmt(copy_node->else_body, fn);
  if (copy_node->kind == StmtKind::Seq) {
    // Drop removed children and splice nested anonymous sequences.
    std::vector<Stmt> flat;
    for (auto& x : copy_node->seq) {
      if (!x) continue;
      if (x->kind == StmtKind::Seq && x->comment.empty()) {
        for (auto& y : x->seq) flat.push_back(y);
      } else {
        flat.push_back(x);
      }
    }
    copy_node->seq = std::move(flat);
  }
  return fn(copy_node);
}

Stmt substitute_stmt(const Stmt& s, const std::map<const VarNode*, Expr>& subst) {
  auto sub_region = [&](Region& r) {
    for (auto& e : r.starts) e = substitute(e, subst);
  };
  return rewrite_stmt(s, [&](const Stmt& n) -> Stmt {
    for (auto& e : n->indices) e = substitute(e, subst);
    if (n->value) n->value = substitute(n->value, subst);
    if (n->cond) n->cond = substitute(n->cond, subst);
    if (n->kind == StmtKind::Copy) {
      sub_region(n->dst);
      sub_region(n->src);
    }
    for (auto& o : n->operands)
      if (o.elem_offset) o.elem_offset = substitute(o.elem_offset, subst);
    return n;
  });
}

}  // namespace tessel::loop

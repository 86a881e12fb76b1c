// tessel_cube: the cube unit's int8 mode as synthesizable SystemVerilog (docs/isa.md, "mmad" and
// "Timing"; docs/rtl.md describes the pipeline and the timing contract).
//
// One mmad computes C[m1][n1] (+)= sum_k1 A[m1][k1] x B[k1][n1] over fractals of M x K (A, L0A),
// K x N (B, L0B) and M x N int32 (C, L0C), each fractal row-major, A's fractals [m1][k1], B's
// [k1][n1], C's [m1][n1] (docs/isa.md, fractal layouts). Operands are i8 (sign-extended) or u8
// (zero-extended) per `a_signed` / `b_signed`; products are exact, sums are int32 two's complement
// and wrap modulo 2^32, as isa/semantics.cpp's mmad_int8_exec (which sums in int64 and truncates:
// the same value modulo 2^32).
//
// Steps: one fractal triple (mb, nb, kb) per cycle, kb innermost: m1 * n1 * k1 steps (k1 = 0: one
// step per C block, adding nothing; m1 = 0 or n1 = 0: one step that writes nothing).
//
// Pipeline (LATENCY cycles from the cycle the last step issues to the cycle `done` is high):
//   S0  issue: the step's L0A/L0B byte addresses (the first step combinationally from the command:
//       a command presented with `start` while `ready` issues its first step in that cycle);
//   S1  operands: the synchronous L0A/L0B read data of the step;
//   P0  multiply: M x N dot products of K exact products, registered;
//   P1..P[LATENCY-4]  retiming registers (the adder tree, spread by a synthesis tool);
//   ACC accumulate: the block's running int32 sum (+ the old C block at the first kb when
//       `accumulate`, read from L0C one cycle earlier); at the last kb the block is presented on
//       the L0C write port;
//   the write commits at the next edge, and `done` (with the command's tag) is high in the cycle
//       after the commit of the command's last block.
// A consumer samples `done` at the closing edge of that cycle, so the results are usable from the
// cycle after it: issue cycle s + steps + LATENCY, npu::instruction_cost's occupancy + latency.
// `ready` is low while a command's later steps issue; a new command can be presented in the cycle
// after its predecessor's last step (back-to-back mmads overlap in the pipeline).
/* verilator lint_off DECLFILENAME */
module tessel_cube #(
    parameter int M = 16,        // fractal rows of A and C
    parameter int K = 16,        // fractal columns of A, rows of B
    parameter int N = 16,        // fractal columns of B and C
    parameter int LATENCY = 8,   // cycles from the last step's issue to `done`; >= 4
    parameter int AW = 32,       // byte address width of the L0 ports
    parameter int DW = 32,       // width of m1, k1, n1
    parameter int TW = 32        // width of the command tag
) (
    input  logic               clk,
    input  logic               rst_n,       // synchronous, active low
    // command
    input  logic               start,
    output logic               ready,
    input  logic [DW-1:0]      m1,
    input  logic [DW-1:0]      k1,
    input  logic [DW-1:0]      n1,
    input  logic               accumulate,
    input  logic               a_signed,    // 1: A is i8, 0: u8
    input  logic               b_signed,
    input  logic [AW-1:0]      a_base,      // byte address of A's first fractal in L0A
    input  logic [AW-1:0]      b_base,
    input  logic [AW-1:0]      c_base,
    input  logic [TW-1:0]      tag,
    // L0A / L0B / L0C ports: synchronous reads (address in cycle t, data in cycle t + 1)
    output logic               a_rd_en,
    output logic [AW-1:0]      a_rd_addr,
    input  logic [M*K*8-1:0]   a_rd_data,   // element (i, j) at bits [(i*K + j)*8 +: 8]
    output logic               b_rd_en,
    output logic [AW-1:0]      b_rd_addr,
    input  logic [K*N*8-1:0]   b_rd_data,   // element (i, j) at bits [(i*N + j)*8 +: 8]
    output logic               c_rd_en,
    output logic [AW-1:0]      c_rd_addr,
    input  logic [M*N*32-1:0]  c_rd_data,   // element (i, j) at bits [(i*N + j)*32 +: 32]
    output logic               c_wr_en,
    output logic [AW-1:0]      c_wr_addr,
    output logic [M*N*32-1:0]  c_wr_data,
    // completion
    output logic               done,
    output logic [TW-1:0]      done_tag
);
  localparam int E = LATENCY - 4;  // retiming stages after P0
  localparam int A_BYTES = M * K, B_BYTES = K * N, C_BYTES = M * N * 4;

  initial begin
    if (LATENCY < 4) $error("tessel_cube: LATENCY %0d < 4, the pipeline's minimum depth", LATENCY);
  end

  // Control carried with every step.
  typedef struct packed {
    logic          valid;
    logic          first_k;   // first kb of its C block
    logic          last_k;    // last kb of its C block: the block is written after this step
    logic          last;      // last step of its command
    logic          zero;      // no operands (k1 = 0 or an empty command): adds 0
    logic          write;     // the block is written (not an empty command)
    logic          acc;       // add the old C block
    logic          a_sgn;
    logic          b_sgn;
    logic [AW-1:0] c_addr;
    logic [TW-1:0] tag;
  } ctl_t;

  // ---------------------------------------------------------------------------------------------
  // S0: the sequencer. Its registers hold the step issuing in this cycle while `busy`.
  logic          busy;
  logic [DW-1:0] r_m1, r_k1, r_n1, mb, nb, kb;
  logic [AW-1:0] r_b_base, a_row, a_addr, b_addr, b_col, c_addr, b_stride;
  logic          r_acc, r_a_sgn, r_b_sgn, r_empty, r_zero;
  logic [TW-1:0] r_tag;

  // The step issuing in this cycle: the first step of a new command, or the sequencer's.
  logic          take;
  logic [DW-1:0] s_m1, s_k1, s_n1, s_mb, s_nb, s_kb, s_keff;
  logic [AW-1:0] s_b_base, s_a_row, s_a_addr, s_b_addr, s_b_col, s_c_addr, s_b_stride;
  logic          s_empty, s_zero, s_last_k, s_last_n, s_last_m;
  ctl_t          s_ctl;

  assign ready = !busy;
  assign take  = start && !busy;

  always_comb begin
    if (busy) begin
      s_m1 = r_m1; s_k1 = r_k1; s_n1 = r_n1;
      s_mb = mb; s_nb = nb; s_kb = kb;
      s_b_base = r_b_base; s_a_row = a_row; s_a_addr = a_addr;
      s_b_addr = b_addr; s_b_col = b_col; s_c_addr = c_addr; s_b_stride = b_stride;
      s_empty = r_empty; s_zero = r_zero;
    end else begin
      s_m1 = m1; s_k1 = k1; s_n1 = n1;
      s_mb = '0; s_nb = '0; s_kb = '0;
      s_b_base = b_base; s_a_row = a_base; s_a_addr = a_base;
      s_b_addr = b_base; s_b_col = b_base; s_c_addr = c_base;
      s_b_stride = AW'(n1) * AW'(B_BYTES);
      s_empty = (m1 == '0) || (n1 == '0);
      s_zero = (m1 == '0) || (n1 == '0) || (k1 == '0);
    end
    s_keff   = s_zero ? DW'(1) : s_k1;  // k1 = 0 or an empty command: one step per block
    s_last_k = (s_kb == s_keff - DW'(1));
    s_last_n = s_empty || (s_nb == s_n1 - DW'(1));
    s_last_m = s_empty || (s_mb == s_m1 - DW'(1));
    s_ctl.valid   = busy || take;
    s_ctl.first_k = (s_kb == '0);
    s_ctl.last_k  = s_last_k;
    s_ctl.last    = s_last_k && s_last_n && s_last_m;
    s_ctl.zero    = s_zero;
    s_ctl.write   = !s_empty;
    s_ctl.acc     = busy ? r_acc : accumulate;
    s_ctl.a_sgn   = busy ? r_a_sgn : a_signed;
    s_ctl.b_sgn   = busy ? r_b_sgn : b_signed;
    s_ctl.c_addr  = s_c_addr;
    s_ctl.tag     = busy ? r_tag : tag;
  end

  assign a_rd_en   = s_ctl.valid && !s_zero;
  assign a_rd_addr = s_a_addr;
  assign b_rd_en   = s_ctl.valid && !s_zero;
  assign b_rd_addr = s_b_addr;

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      busy <= 1'b0;
    end else if (s_ctl.valid) begin
      if (take) begin
        r_m1 <= m1; r_k1 <= k1; r_n1 <= n1;
        r_acc <= accumulate; r_a_sgn <= a_signed; r_b_sgn <= b_signed; r_tag <= tag;
        r_b_base <= b_base; r_empty <= s_empty; r_zero <= s_zero; b_stride <= s_b_stride;
      end
      busy <= !s_ctl.last;
      if (!s_last_k) begin  // next kb: the row's next A fractal, the next row of B fractals
        mb <= s_mb; nb <= s_nb; kb <= s_kb + DW'(1);
        a_row <= s_a_row; a_addr <= s_a_addr + AW'(A_BYTES);
        b_col <= s_b_col; b_addr <= s_b_addr + s_b_stride;
        c_addr <= s_c_addr;
      end else if (!s_last_n) begin  // the next C block of the row: A's row again, B's next column
        mb <= s_mb; nb <= s_nb + DW'(1); kb <= '0;
        a_row <= s_a_row; a_addr <= s_a_row;
        b_col <= s_b_col + AW'(B_BYTES); b_addr <= s_b_col + AW'(B_BYTES);
        c_addr <= s_c_addr + AW'(C_BYTES);
      end else begin  // the next row of C blocks: A's next row, B's first column
        mb <= s_mb + DW'(1); nb <= '0; kb <= '0;
        a_row <= s_a_row + AW'(s_keff) * AW'(A_BYTES);
        a_addr <= s_a_row + AW'(s_keff) * AW'(A_BYTES);
        b_col <= s_b_base; b_addr <= s_b_base;
        c_addr <= s_c_addr + AW'(C_BYTES);
      end
    end
  end

  // ---------------------------------------------------------------------------------------------
  // Control pipeline: ctl[0] = S1, ctl[1] = P0, ctl[1 + e] = P[e]; ctl[1 + E] feeds ACC.
  ctl_t ctl[E + 2];
  always_ff @(posedge clk) begin
    if (!rst_n) ctl[0].valid <= 1'b0;
    else ctl[0] <= s_ctl;
  end
  for (genvar g = 1; g < E + 2; g++) begin : g_ctl
    always_ff @(posedge clk) begin
      if (!rst_n) ctl[g].valid <= 1'b0;
      else ctl[g] <= ctl[g - 1];
    end
  end

  // P0: the multiply, M x N dot products over K of exact 9-bit x 9-bit products (i8
  // sign-extended, u8 zero-extended), registered; P[e]: retiming registers.
  // The operand fractals as arrays of 9-bit signed elements (i8 sign-extended, u8
  // zero-extended), widened once per element; the products are exact 9 x 9 -> 18 bits. (Arrays
  // also simulate faster: Verilator indexes them directly, where a variable part-select of a wide
  // vector costs a shift per element.)
  logic signed [8:0] a_el[M*K], b_el[K*N];
  always_comb begin
    for (int i = 0; i < M * K; i++) a_el[i] = {ctl[0].a_sgn & a_rd_data[i*8 + 7], a_rd_data[i*8 +: 8]};
    for (int i = 0; i < K * N; i++) b_el[i] = {ctl[0].b_sgn & b_rd_data[i*8 + 7], b_rd_data[i*8 +: 8]};
  end
  logic [M*N*32-1:0] mac;  // element (i, j) at bits [(i*N + j)*32 +: 32]
  always_comb begin
    logic signed [31:0] sum;
    sum = '0;
    mac = '0;
    if (ctl[0].valid && !ctl[0].zero) begin
      for (int i = 0; i < M; i++) begin
        for (int j = 0; j < N; j++) begin
          sum = '0;
          for (int k = 0; k < K; k++) sum = sum + 32'(a_el[i*K + k] * b_el[k*N + j]);
          mac[(i*N + j)*32 +: 32] = sum;
        end
      end
    end
  end
  logic [M*N*32-1:0] psum[E + 1];
  always_ff @(posedge clk) begin
    if (ctl[0].valid) psum[0] <= mac;
  end
  for (genvar g = 1; g <= E; g++) begin : g_retime
    always_ff @(posedge clk) begin
      if (ctl[g].valid) psum[g] <= psum[g - 1];
    end
  end

  // ACC. The old C block is read for the step in ctl[E] (it is in ctl[1 + E] in the next cycle,
  // when the read data arrives).
  assign c_rd_en   = ctl[E].valid && ctl[E].first_k && ctl[E].acc && ctl[E].write;
  assign c_rd_addr = ctl[E].c_addr;

  logic [M*N*32-1:0] acc, acc_next;
  always_comb begin
    logic [31:0] base;
    base = '0;
    for (int i = 0; i < M*N; i++) begin
      if (!ctl[E + 1].first_k) base = acc[i*32 +: 32];
      else if (ctl[E + 1].acc) base = c_rd_data[i*32 +: 32];
      else base = '0;
      acc_next[i*32 +: 32] = base + psum[E][i*32 +: 32];  // int32, wrapping modulo 2^32
    end
  end

  logic          wr_en_q, last_q, done_q;
  logic [AW-1:0] wr_addr_q;
  logic [TW-1:0] tag_q, done_tag_q;
  always_ff @(posedge clk) begin
    if (ctl[E + 1].valid) begin
      acc <= acc_next;
      wr_addr_q <= ctl[E + 1].c_addr;
      tag_q <= ctl[E + 1].tag;
    end
    if (!rst_n) begin
      wr_en_q <= 1'b0;
      last_q <= 1'b0;
      done_q <= 1'b0;
    end else begin
      wr_en_q <= ctl[E + 1].valid && ctl[E + 1].last_k && ctl[E + 1].write;
      last_q <= ctl[E + 1].valid && ctl[E + 1].last;
      done_q <= last_q;  // the cycle after the write of the command's last block commits
    end
    done_tag_q <= tag_q;
  end

  assign c_wr_en   = wr_en_q;
  assign c_wr_addr = wr_addr_q;
  assign c_wr_data = acc;
  assign done      = done_q;
  assign done_tag  = done_tag_q;
endmodule

// tessel_cube_top: tessel_cube with its L0A / L0B / L0C ports served by the simulator's
// scratchpads through DPI-C (simulator/rtl/rtl_cube.cpp), so that only the command and the
// completion cross the SystemC boundary (the operand ports are 2,048 to 8,192 bits wide).
// Simulation only (the DPI calls are the memories); tessel_cube itself is the synthesizable part.
// `mem_id` names the core's memories in rtl_cube.cpp's table.
/* verilator lint_off DECLFILENAME */
module tessel_cube_top #(
    parameter int M = 16,
    parameter int K = 16,
    parameter int N = 16,
    parameter int LATENCY = 8
) (
    input  logic        clk,
    input  logic        rst_n,
    input  logic [31:0] mem_id,
    input  logic        start,
    output logic        ready,
    input  logic [31:0] m1,
    input  logic [31:0] k1,
    input  logic [31:0] n1,
    input  logic        accumulate,
    input  logic        a_signed,
    input  logic        b_signed,
    input  logic [31:0] a_base,
    input  logic [31:0] b_base,
    input  logic [31:0] c_base,
    input  logic [31:0] tag,
    output logic        done,
    output logic [31:0] done_tag
);
  localparam int AB = M * K * 8, BB = K * N * 8, CB = M * N * 32;

  // Synchronous reads of `bytes` bytes at byte `offset` of scope `scope` (2 l0a, 3 l0b, 4 l0c:
  // isa::Scope) into `data` (byte i at bits [8i +: 8]); the write of C's block.
  import "DPI-C" function void tessel_rtl_read_a(input int unsigned mem, input int unsigned offset,
                                                 input int unsigned bytes, output bit [AB-1:0] data);
  import "DPI-C" function void tessel_rtl_read_b(input int unsigned mem, input int unsigned offset,
                                                 input int unsigned bytes, output bit [BB-1:0] data);
  import "DPI-C" function void tessel_rtl_read_c(input int unsigned mem, input int unsigned offset,
                                                 input int unsigned bytes, output bit [CB-1:0] data);
  import "DPI-C" function void tessel_rtl_write_c(input int unsigned mem, input int unsigned offset,
                                                  input int unsigned bytes, input bit [CB-1:0] data);

  logic          a_rd_en, b_rd_en, c_rd_en, c_wr_en;
  logic [31:0]   a_rd_addr, b_rd_addr, c_rd_addr, c_wr_addr;
  logic [AB-1:0] a_rd_data;
  logic [BB-1:0] b_rd_data;
  logic [CB-1:0] c_rd_data, c_wr_data;

  tessel_cube #(.M(M), .K(K), .N(N), .LATENCY(LATENCY)) u_cube (
      .clk, .rst_n, .start, .ready, .m1, .k1, .n1, .accumulate, .a_signed, .b_signed,
      .a_base, .b_base, .c_base, .tag,
      .a_rd_en, .a_rd_addr, .a_rd_data, .b_rd_en, .b_rd_addr, .b_rd_data,
      .c_rd_en, .c_rd_addr, .c_rd_data, .c_wr_en, .c_wr_addr, .c_wr_data,
      .done, .done_tag);

  always_ff @(posedge clk) begin
    bit [AB-1:0] a;
    bit [BB-1:0] b;
    bit [CB-1:0] c;
    if (a_rd_en) begin
      tessel_rtl_read_a(mem_id, a_rd_addr, M * K, a);
      a_rd_data <= a;
    end
    if (b_rd_en) begin
      tessel_rtl_read_b(mem_id, b_rd_addr, K * N, b);
      b_rd_data <= b;
    end
    if (c_rd_en) begin
      tessel_rtl_read_c(mem_id, c_rd_addr, M * N * 4, c);
      c_rd_data <= c;
    end
    if (c_wr_en) tessel_rtl_write_c(mem_id, c_wr_addr, M * N * 4, c_wr_data);
  end
endmodule

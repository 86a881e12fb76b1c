.program "Extracted from {main_graph}"
.gm_bytes 448
.op 0 /blocks.0/relu/Relu
.op 1 /last_layer/Gemm
.buffer /blocks.0/layer_norm/Pow_output_0 kind=input addr=0x0 bytes=64 dtype=f16 shape=[1,32]
.buffer /blocks.0/layer_norm/Sub_output_0 kind=input addr=0x40 bytes=64 dtype=f16 shape=[1,32]
.buffer blocks.0.layer_norm.weight kind=constant addr=0x80 bytes=64 dtype=f16 shape=[32]
.buffer blocks.0.layer_norm.bias kind=constant addr=0xc0 bytes=64 dtype=f16 shape=[32]
.buffer /blocks.0/relu/Relu_output_0 kind=scratch addr=0x100 bytes=64 dtype=f16 shape=[1,32]
.buffer /last_layer/Gemm_output_0 kind=output addr=0x140 bytes=2 dtype=f16 shape=[1,1]
.buffer last_layer.weight kind=constant addr=0x180 bytes=64 dtype=f16 shape=[1,32]

.core 0
  dma.f16 ub[x0+0], gm[x0+0], extent=[32], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 0  # op=0
  dma.f16 ub[x0+64], gm[x0+64], extent=[32], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 1  # op=0
  dma.f16 ub[x0+128], gm[x0+128], extent=[32], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 2  # op=0
  dma.f16 ub[x0+192], gm[x0+192], extent=[32], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 3  # op=0
  wait_flag mte2, vector, 0  # op=0
  vdup.f16 ub[x0+256]{1,0}, 0, count=1  # op=0
  vmuls.f16 ub[x0+288]{1,32}, ub[x0+0]{1,0}, 0.03125, count=32  # op=0
  vrsum.f16 ub[x0+256]{0,0}, ub[x0+288]{1,32}, count=32  # op=0
  vadds.f16 ub[x0+352]{1,0}, ub[x0+256]{1,0}, 1e-05, count=1  # op=0
  vsqrt.f16 ub[x0+384]{1,0}, ub[x0+352]{1,0}, count=1  # op=0
  wait_flag mte2, vector, 1  # op=0
  vdiv.f16 ub[x0+416]{1,0}, ub[x0+64]{1,0}, ub[x0+384]{0,0}, count=32  # op=0
  wait_flag mte2, vector, 2  # op=0
  vmul.f16 ub[x0+480]{1,0}, ub[x0+416]{1,0}, ub[x0+128]{1,0}, count=32  # op=0
  wait_flag mte2, vector, 3  # op=0
  vadd.f16 ub[x0+544]{1,0}, ub[x0+480]{1,0}, ub[x0+192]{1,0}, count=32  # op=0
  vmaxs.f16 ub[x0+608]{1,0}, ub[x0+544]{1,0}, 0, count=32  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+256], ub[x0+608], extent=[32], dst_stride=[1], src_stride=[1]  # op=0
  barrier  # op=0
  dma.f16 l1[x0+0], gm[x0+384], extent=[32], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, mte1, 0  # op=1
  wait_flag mte2, mte1, 0  # op=1
  load2d.f16 l0b[x0+0], l1[x0+0], rows=32, cols=1, src_row_stride=32, transpose=1  # op=1
  dma.f16 l1[x0+64], gm[x0+256], extent=[32], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, mte1, 0  # op=1
  wait_flag mte2, mte1, 0  # op=1
  load2d.f16 l0a[x0+0], l1[x0+64], rows=1, cols=32, src_row_stride=32  # op=1
  set_flag mte1, cube, 0  # op=1
  wait_flag mte1, cube, 0  # op=1
  mmad l0c[x0+0], l0a[x0+0], l0b[x0+0], m1=1, k1=2, n1=1  # op=1
  set_flag cube, fix, 0  # op=1
  wait_flag cube, fix, 0  # op=1
  fix.f16 ub[x0+0], l0c[x0+0], m=1, n=1, dst_row_stride=1  # op=1
  set_flag fix, vector, 0  # op=1
  wait_flag fix, vector, 0  # op=1
  vadds.f16 ub[x0+32]{1,0}, ub[x0+0]{1,0}, -0.22607449, count=1  # op=1
  set_flag vector, mte3, 0  # op=1
  wait_flag vector, mte3, 0  # op=1
  dma.f16 gm[x0+320], ub[x0+32], extent=[1], dst_stride=[1], src_stride=[1]  # op=1
  barrier  # op=1

.program "Extracted from {main_graph}"
.gm_bytes 2560
.op 0 /relu1/Relu
.op 1 /blocks.0/fcn_layer/Gemm
.op 2 /blocks.0/layer_norm/ReduceMean
.buffer /layernorm1/ReduceMean_1_output_0 kind=input addr=0x0 bytes=2 dtype=f16 shape=[1,1]
.buffer /layernorm1/Sub_output_0 kind=input addr=0x40 bytes=64 dtype=f16 shape=[1,32]
.buffer layernorm1.weight kind=constant addr=0x80 bytes=64 dtype=f16 shape=[32]
.buffer layernorm1.bias kind=constant addr=0xc0 bytes=64 dtype=f16 shape=[32]
.buffer /relu1/Relu_output_0 kind=scratch addr=0x100 bytes=64 dtype=f16 shape=[1,32]
.buffer /blocks.0/fcn_layer/Gemm_output_0 kind=output addr=0x140 bytes=64 dtype=f16 shape=[1,32]
.buffer blocks.0.fcn_layer.weight kind=constant addr=0x180 bytes=2048 dtype=f16 shape=[32,32]
.buffer blocks.0.fcn_layer.bias kind=constant addr=0x980 bytes=64 dtype=f16 shape=[32]
.buffer /blocks.0/layer_norm/ReduceMean_output_0 kind=output addr=0x9c0 bytes=2 dtype=f16 shape=[1,1]

.core 0
  set_flag mte3, vector, 0  # op=0
  set_flag vector, mte2, 3  # op=0
  set_flag vector, mte2, 2  # op=0
  set_flag vector, mte2, 1  # op=0
  set_flag vector, mte2, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  dma.f16 ub[x0+0], gm[x0+0], extent=[1], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag vector, mte2, 1  # op=0
  dma.f16 ub[x0+32], gm[x0+64], extent=[8], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 1  # op=0
  wait_flag vector, mte2, 2  # op=0
  dma.f16 ub[x0+64], gm[x0+128], extent=[8], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 2  # op=0
  wait_flag vector, mte2, 3  # op=0
  dma.f16 ub[x0+96], gm[x0+192], extent=[8], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 3  # op=0
  wait_flag mte2, vector, 0  # op=0
  vadds.f16 ub[x0+128]{1,0}, ub[x0+0]{1,0}, 1e-05, count=1  # op=0
  set_flag vector, mte2, 0  # op=0
  vsqrt.f16 ub[x0+160]{1,0}, ub[x0+128]{1,0}, count=1  # op=0
  wait_flag mte2, vector, 1  # op=0
  vdiv.f16 ub[x0+192]{1,0}, ub[x0+32]{1,0}, ub[x0+160]{0,0}, count=8  # op=0
  set_flag vector, mte2, 1  # op=0
  wait_flag mte2, vector, 2  # op=0
  vmul.f16 ub[x0+224]{1,0}, ub[x0+192]{1,0}, ub[x0+64]{1,0}, count=8  # op=0
  set_flag vector, mte2, 2  # op=0
  wait_flag mte2, vector, 3  # op=0
  vadd.f16 ub[x0+256]{1,0}, ub[x0+224]{1,0}, ub[x0+96]{1,0}, count=8  # op=0
  set_flag vector, mte2, 3  # op=0
  wait_flag mte3, vector, 0  # op=0
  vmaxs.f16 ub[x0+288]{1,0}, ub[x0+256]{1,0}, 0, count=8  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+256], ub[x0+288], extent=[8], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte3, vector, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  wait_flag vector, mte2, 1  # op=0
  wait_flag vector, mte2, 2  # op=0
  wait_flag vector, mte2, 3  # op=0
  wait_flag mte3, vector, 0  # op=0
  core_barrier  # op=0
  dma.f16 l1[x0+0], gm[x0+256], extent=[32], dst_stride=[1], src_stride=[1]  # op=1
  core_barrier  # op=1
  dma.f16 ub[x0+0], gm[x0+320], extent=[32], dst_stride=[1], src_stride=[1]  # op=2
  set_flag mte2, vector, 0  # op=2
  wait_flag mte2, vector, 0  # op=2
  vdup.f16 ub[x0+64]{1,0}, 0, count=1  # op=2
  vmuls.f16 ub[x0+96]{1,32}, ub[x0+0]{1,0}, 0.03125, count=32  # op=2
  vrsum.f16 ub[x0+64]{0,0}, ub[x0+96]{1,32}, count=32  # op=2
  set_flag vector, mte3, 0  # op=2
  wait_flag vector, mte3, 0  # op=2
  dma.f16 gm[x0+2496], ub[x0+64], extent=[1], dst_stride=[1], src_stride=[1]  # op=2
  core_barrier  # op=2

.core 1
  set_flag mte3, vector, 0  # op=0
  set_flag vector, mte2, 3  # op=0
  set_flag vector, mte2, 2  # op=0
  set_flag vector, mte2, 1  # op=0
  set_flag vector, mte2, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  dma.f16 ub[x0+0], gm[x0+0], extent=[1], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag vector, mte2, 1  # op=0
  dma.f16 ub[x0+32], gm[x0+80], extent=[8], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 1  # op=0
  wait_flag vector, mte2, 2  # op=0
  dma.f16 ub[x0+64], gm[x0+144], extent=[8], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 2  # op=0
  wait_flag vector, mte2, 3  # op=0
  dma.f16 ub[x0+96], gm[x0+208], extent=[8], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 3  # op=0
  wait_flag mte2, vector, 0  # op=0
  vadds.f16 ub[x0+128]{1,0}, ub[x0+0]{1,0}, 1e-05, count=1  # op=0
  set_flag vector, mte2, 0  # op=0
  vsqrt.f16 ub[x0+160]{1,0}, ub[x0+128]{1,0}, count=1  # op=0
  wait_flag mte2, vector, 1  # op=0
  vdiv.f16 ub[x0+192]{1,0}, ub[x0+32]{1,0}, ub[x0+160]{0,0}, count=8  # op=0
  set_flag vector, mte2, 1  # op=0
  wait_flag mte2, vector, 2  # op=0
  vmul.f16 ub[x0+224]{1,0}, ub[x0+192]{1,0}, ub[x0+64]{1,0}, count=8  # op=0
  set_flag vector, mte2, 2  # op=0
  wait_flag mte2, vector, 3  # op=0
  vadd.f16 ub[x0+256]{1,0}, ub[x0+224]{1,0}, ub[x0+96]{1,0}, count=8  # op=0
  set_flag vector, mte2, 3  # op=0
  wait_flag mte3, vector, 0  # op=0
  vmaxs.f16 ub[x0+288]{1,0}, ub[x0+256]{1,0}, 0, count=8  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+272], ub[x0+288], extent=[8], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte3, vector, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  wait_flag vector, mte2, 1  # op=0
  wait_flag vector, mte2, 2  # op=0
  wait_flag vector, mte2, 3  # op=0
  wait_flag mte3, vector, 0  # op=0
  core_barrier  # op=0
  dma.f16 l1[x0+0], gm[x0+256], extent=[32], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, mte1, 0  # op=1
  set_flag mte3, vector, 0  # op=1
  set_flag vector, mte2, 0  # op=1
  set_flag vector, fix, 0  # op=1
  set_flag fix, cube, 0  # op=1
  set_flag mte1, mte2, 0  # op=1
  set_flag cube, mte1, 0  # op=1
  wait_flag mte2, mte1, 0  # op=1
  wait_flag cube, mte1, 0  # op=1
  load2d.f16 l0a[x0+0], l1[x0+0], rows=1, cols=32, src_row_stride=32  # op=1
  wait_flag mte1, mte2, 0  # op=1
  dma.f16 l1[x0+64], gm[x0+384], extent=[512], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, mte1, 0  # op=1
  wait_flag mte2, mte1, 0  # op=1
  load2d.f16 l0b[x0+0], l1[x0+64], rows=32, cols=16, src_row_stride=32, transpose=1  # op=1
  set_flag mte1, mte2, 0  # op=1
  set_flag mte1, cube, 0  # op=1
  wait_flag fix, cube, 0  # op=1
  wait_flag mte1, cube, 0  # op=1
  mmad l0c[x0+0], l0a[x0+0], l0b[x0+0], m1=1, k1=2, n1=1  # op=1
  set_flag cube, mte1, 0  # op=1
  set_flag cube, fix, 0  # op=1
  wait_flag vector, fix, 0  # op=1
  wait_flag cube, fix, 0  # op=1
  fix.f16 ub[x0+0], l0c[x0+0], m=1, n=16, dst_row_stride=16  # op=1
  set_flag fix, cube, 0  # op=1
  set_flag fix, vector, 0  # op=1
  wait_flag vector, mte2, 0  # op=1
  dma.f16 ub[x0+32], gm[x0+2432], extent=[16], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, vector, 0  # op=1
  wait_flag mte3, vector, 0  # op=1
  wait_flag mte2, vector, 0  # op=1
  wait_flag fix, vector, 0  # op=1
  vadd.f16 ub[x0+64]{1,0}, ub[x0+0]{1,0}, ub[x0+32]{1,0}, count=16  # op=1
  set_flag vector, fix, 0  # op=1
  set_flag vector, mte2, 0  # op=1
  set_flag vector, mte3, 0  # op=1
  wait_flag vector, mte3, 0  # op=1
  dma.f16 gm[x0+320], ub[x0+64], extent=[16], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte3, vector, 0  # op=1
  wait_flag cube, mte1, 0  # op=1
  wait_flag mte1, mte2, 0  # op=1
  wait_flag fix, cube, 0  # op=1
  wait_flag vector, fix, 0  # op=1
  wait_flag vector, mte2, 0  # op=1
  wait_flag mte3, vector, 0  # op=1
  core_barrier  # op=1
  dma.f16 ub[x0+0], gm[x0+320], extent=[32], dst_stride=[1], src_stride=[1]  # op=2
  set_flag mte2, vector, 0  # op=2
  wait_flag mte2, vector, 0  # op=2
  vdup.f16 ub[x0+64]{1,0}, 0, count=1  # op=2
  vmuls.f16 ub[x0+96]{1,32}, ub[x0+0]{1,0}, 0.03125, count=32  # op=2
  vrsum.f16 ub[x0+64]{0,0}, ub[x0+96]{1,32}, count=32  # op=2
  set_flag vector, mte3, 0  # op=2
  wait_flag vector, mte3, 0  # op=2
  dma.f16 gm[x0+2496], ub[x0+64], extent=[1], dst_stride=[1], src_stride=[1]  # op=2
  core_barrier  # op=2

.core 2
  set_flag mte3, vector, 0  # op=0
  set_flag vector, mte2, 3  # op=0
  set_flag vector, mte2, 2  # op=0
  set_flag vector, mte2, 1  # op=0
  set_flag vector, mte2, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  dma.f16 ub[x0+0], gm[x0+0], extent=[1], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag vector, mte2, 1  # op=0
  dma.f16 ub[x0+32], gm[x0+96], extent=[8], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 1  # op=0
  wait_flag vector, mte2, 2  # op=0
  dma.f16 ub[x0+64], gm[x0+160], extent=[8], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 2  # op=0
  wait_flag vector, mte2, 3  # op=0
  dma.f16 ub[x0+96], gm[x0+224], extent=[8], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 3  # op=0
  wait_flag mte2, vector, 0  # op=0
  vadds.f16 ub[x0+128]{1,0}, ub[x0+0]{1,0}, 1e-05, count=1  # op=0
  set_flag vector, mte2, 0  # op=0
  vsqrt.f16 ub[x0+160]{1,0}, ub[x0+128]{1,0}, count=1  # op=0
  wait_flag mte2, vector, 1  # op=0
  vdiv.f16 ub[x0+192]{1,0}, ub[x0+32]{1,0}, ub[x0+160]{0,0}, count=8  # op=0
  set_flag vector, mte2, 1  # op=0
  wait_flag mte2, vector, 2  # op=0
  vmul.f16 ub[x0+224]{1,0}, ub[x0+192]{1,0}, ub[x0+64]{1,0}, count=8  # op=0
  set_flag vector, mte2, 2  # op=0
  wait_flag mte2, vector, 3  # op=0
  vadd.f16 ub[x0+256]{1,0}, ub[x0+224]{1,0}, ub[x0+96]{1,0}, count=8  # op=0
  set_flag vector, mte2, 3  # op=0
  wait_flag mte3, vector, 0  # op=0
  vmaxs.f16 ub[x0+288]{1,0}, ub[x0+256]{1,0}, 0, count=8  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+288], ub[x0+288], extent=[8], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte3, vector, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  wait_flag vector, mte2, 1  # op=0
  wait_flag vector, mte2, 2  # op=0
  wait_flag vector, mte2, 3  # op=0
  wait_flag mte3, vector, 0  # op=0
  core_barrier  # op=0
  dma.f16 l1[x0+0], gm[x0+256], extent=[32], dst_stride=[1], src_stride=[1]  # op=1
  core_barrier  # op=1
  dma.f16 ub[x0+0], gm[x0+320], extent=[32], dst_stride=[1], src_stride=[1]  # op=2
  set_flag mte2, vector, 0  # op=2
  wait_flag mte2, vector, 0  # op=2
  vdup.f16 ub[x0+64]{1,0}, 0, count=1  # op=2
  vmuls.f16 ub[x0+96]{1,32}, ub[x0+0]{1,0}, 0.03125, count=32  # op=2
  vrsum.f16 ub[x0+64]{0,0}, ub[x0+96]{1,32}, count=32  # op=2
  set_flag vector, mte3, 0  # op=2
  wait_flag vector, mte3, 0  # op=2
  dma.f16 gm[x0+2496], ub[x0+64], extent=[1], dst_stride=[1], src_stride=[1]  # op=2
  core_barrier  # op=2

.core 3
  set_flag mte3, vector, 0  # op=0
  set_flag vector, mte2, 3  # op=0
  set_flag vector, mte2, 2  # op=0
  set_flag vector, mte2, 1  # op=0
  set_flag vector, mte2, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  dma.f16 ub[x0+0], gm[x0+0], extent=[1], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag vector, mte2, 1  # op=0
  dma.f16 ub[x0+32], gm[x0+112], extent=[8], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 1  # op=0
  wait_flag vector, mte2, 2  # op=0
  dma.f16 ub[x0+64], gm[x0+176], extent=[8], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 2  # op=0
  wait_flag vector, mte2, 3  # op=0
  dma.f16 ub[x0+96], gm[x0+240], extent=[8], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 3  # op=0
  wait_flag mte2, vector, 0  # op=0
  vadds.f16 ub[x0+128]{1,0}, ub[x0+0]{1,0}, 1e-05, count=1  # op=0
  set_flag vector, mte2, 0  # op=0
  vsqrt.f16 ub[x0+160]{1,0}, ub[x0+128]{1,0}, count=1  # op=0
  wait_flag mte2, vector, 1  # op=0
  vdiv.f16 ub[x0+192]{1,0}, ub[x0+32]{1,0}, ub[x0+160]{0,0}, count=8  # op=0
  set_flag vector, mte2, 1  # op=0
  wait_flag mte2, vector, 2  # op=0
  vmul.f16 ub[x0+224]{1,0}, ub[x0+192]{1,0}, ub[x0+64]{1,0}, count=8  # op=0
  set_flag vector, mte2, 2  # op=0
  wait_flag mte2, vector, 3  # op=0
  vadd.f16 ub[x0+256]{1,0}, ub[x0+224]{1,0}, ub[x0+96]{1,0}, count=8  # op=0
  set_flag vector, mte2, 3  # op=0
  wait_flag mte3, vector, 0  # op=0
  vmaxs.f16 ub[x0+288]{1,0}, ub[x0+256]{1,0}, 0, count=8  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+304], ub[x0+288], extent=[8], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte3, vector, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  wait_flag vector, mte2, 1  # op=0
  wait_flag vector, mte2, 2  # op=0
  wait_flag vector, mte2, 3  # op=0
  wait_flag mte3, vector, 0  # op=0
  core_barrier  # op=0
  dma.f16 l1[x0+0], gm[x0+256], extent=[32], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, mte1, 0  # op=1
  set_flag mte3, vector, 0  # op=1
  set_flag vector, mte2, 0  # op=1
  set_flag vector, fix, 0  # op=1
  set_flag fix, cube, 0  # op=1
  set_flag mte1, mte2, 0  # op=1
  set_flag cube, mte1, 0  # op=1
  wait_flag mte2, mte1, 0  # op=1
  wait_flag cube, mte1, 0  # op=1
  load2d.f16 l0a[x0+0], l1[x0+0], rows=1, cols=32, src_row_stride=32  # op=1
  wait_flag mte1, mte2, 0  # op=1
  dma.f16 l1[x0+64], gm[x0+1408], extent=[512], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, mte1, 0  # op=1
  wait_flag mte2, mte1, 0  # op=1
  load2d.f16 l0b[x0+0], l1[x0+64], rows=32, cols=16, src_row_stride=32, transpose=1  # op=1
  set_flag mte1, mte2, 0  # op=1
  set_flag mte1, cube, 0  # op=1
  wait_flag fix, cube, 0  # op=1
  wait_flag mte1, cube, 0  # op=1
  mmad l0c[x0+0], l0a[x0+0], l0b[x0+0], m1=1, k1=2, n1=1  # op=1
  set_flag cube, mte1, 0  # op=1
  set_flag cube, fix, 0  # op=1
  wait_flag vector, fix, 0  # op=1
  wait_flag cube, fix, 0  # op=1
  fix.f16 ub[x0+0], l0c[x0+0], m=1, n=16, dst_row_stride=16  # op=1
  set_flag fix, cube, 0  # op=1
  set_flag fix, vector, 0  # op=1
  wait_flag vector, mte2, 0  # op=1
  dma.f16 ub[x0+32], gm[x0+2464], extent=[16], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, vector, 0  # op=1
  wait_flag mte3, vector, 0  # op=1
  wait_flag mte2, vector, 0  # op=1
  wait_flag fix, vector, 0  # op=1
  vadd.f16 ub[x0+64]{1,0}, ub[x0+0]{1,0}, ub[x0+32]{1,0}, count=16  # op=1
  set_flag vector, fix, 0  # op=1
  set_flag vector, mte2, 0  # op=1
  set_flag vector, mte3, 0  # op=1
  wait_flag vector, mte3, 0  # op=1
  dma.f16 gm[x0+352], ub[x0+64], extent=[16], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte3, vector, 0  # op=1
  wait_flag cube, mte1, 0  # op=1
  wait_flag mte1, mte2, 0  # op=1
  wait_flag fix, cube, 0  # op=1
  wait_flag vector, fix, 0  # op=1
  wait_flag vector, mte2, 0  # op=1
  wait_flag mte3, vector, 0  # op=1
  core_barrier  # op=1
  dma.f16 ub[x0+0], gm[x0+320], extent=[32], dst_stride=[1], src_stride=[1]  # op=2
  set_flag mte2, vector, 0  # op=2
  wait_flag mte2, vector, 0  # op=2
  vdup.f16 ub[x0+64]{1,0}, 0, count=1  # op=2
  vmuls.f16 ub[x0+96]{1,32}, ub[x0+0]{1,0}, 0.03125, count=32  # op=2
  vrsum.f16 ub[x0+64]{0,0}, ub[x0+96]{1,32}, count=32  # op=2
  set_flag vector, mte3, 0  # op=2
  wait_flag vector, mte3, 0  # op=2
  dma.f16 gm[x0+2496], ub[x0+64], extent=[1], dst_stride=[1], src_stride=[1]  # op=2
  core_barrier  # op=2

.program test
.gm_bytes 2496
.op 0 Gemm_0
.buffer x kind=input addr=0x0 bytes=320 dtype=f16 shape=[4,40]
.buffer Gemm_out kind=output addr=0x140 bytes=192 dtype=f16 shape=[4,24]
.buffer w kind=constant addr=0x200 bytes=1920 dtype=f16 shape=[24,40]
.buffer c kind=constant addr=0x980 bytes=48 dtype=f16 shape=[24]

.core 0
  dma.f16 l1[x0+0], gm[x0+0], extent=[160], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, mte1, 0  # op=0
  wait_flag mte2, mte1, 0  # op=0
  load2d.f16 l0a[x0+0], l1[x0+0], rows=4, cols=40, src_row_stride=40  # op=0
  dma.f16 l1[x0+320], gm[x0+512], extent=[960], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, mte1, 0  # op=0
  wait_flag mte2, mte1, 0  # op=0
  load2d.f16 l0b[x0+0], l1[x0+320], rows=40, cols=24, src_row_stride=40, transpose=1  # op=0
  set_flag mte1, cube, 0  # op=0
  wait_flag mte1, cube, 0  # op=0
  mmad l0c[x0+0], l0a[x0+0], l0b[x0+0], m1=1, k1=3, n1=2  # op=0
  set_flag cube, fix, 0  # op=0
  wait_flag cube, fix, 0  # op=0
  fix.f16 ub[x0+0], l0c[x0+0], m=4, n=24, dst_row_stride=24  # op=0
  set_flag fix, vector, 0  # op=0
  dma.f16 ub[x0+192], gm[x0+2432], extent=[24], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  wait_flag fix, vector, 0  # op=0
  vadd.f16 ub[x0+256]{1,24}, ub[x0+0]{1,24}, ub[x0+192]{1,0}, count=24, repeat=4  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+320], ub[x0+256], extent=[96], dst_stride=[1], src_stride=[1]  # op=0
  barrier  # op=0

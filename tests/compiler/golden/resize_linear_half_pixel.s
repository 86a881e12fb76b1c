.program test
.gm_bytes 512
.op 0 Resize_0_MatMul
.op 1 Resize_0_MatMul_1
.buffer x kind=input addr=0x0 bytes=48 dtype=f16 shape=[1,2,3,4]
.buffer Resize_0_MatMul kind=scratch addr=0x40 bytes=96 dtype=f16 shape=[6,8]
.buffer Resize_0_m3 kind=constant addr=0xc0 bytes=64 dtype=f16 shape=[4,8]
.buffer Resize_0_MatMul_1 kind=output addr=0x100 bytes=192 dtype=f16 shape=[2,6,8]
.buffer Resize_0_m2 kind=constant addr=0x1c0 bytes=36 dtype=f16 shape=[6,3]

.core 0
  dma.f16 l1[x0+0], gm[x0+0], extent=[24], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, mte1, 0  # op=0
  wait_flag mte2, mte1, 0  # op=0
  load2d.f16 l0a[x0+0], l1[x0+0], rows=6, cols=4, src_row_stride=4  # op=0
  dma.f16 l1[x0+64], gm[x0+192], extent=[32], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, mte1, 0  # op=0
  wait_flag mte2, mte1, 0  # op=0
  load2d.f16 l0b[x0+0], l1[x0+64], rows=4, cols=8, src_row_stride=8  # op=0
  set_flag mte1, cube, 0  # op=0
  wait_flag mte1, cube, 0  # op=0
  mmad l0c[x0+0], l0a[x0+0], l0b[x0+0], m1=1, k1=1, n1=1  # op=0
  set_flag cube, fix, 0  # op=0
  wait_flag cube, fix, 0  # op=0
  fix.f16 ub[x0+0], l0c[x0+0], m=6, n=8, dst_row_stride=8  # op=0
  set_flag fix, mte3, 0  # op=0
  wait_flag fix, mte3, 0  # op=0
  dma.f16 gm[x0+64], ub[x0+0], extent=[48], dst_stride=[1], src_stride=[1]  # op=0
  barrier  # op=0
  set_flag mte3, fix, 0  # op=1
  set_flag fix, cube, 1  # op=1
  set_flag mte1, mte2, 0  # op=1
  set_flag cube, mte1, 1  # op=1
  set_flag mte3, fix, 1  # op=1
  set_flag fix, cube, 0  # op=1
  set_flag cube, mte1, 0  # op=1
  set_flag mte1, mte2, 1  # op=1
  wait_flag mte1, mte2, 1  # op=1
  dma.f16 l1[x0+0], gm[x0+448], extent=[18], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, mte1, 0  # op=1
  wait_flag cube, mte1, 0  # op=1
  wait_flag mte2, mte1, 0  # op=1
  load2d.f16 l0a[x0+0], l1[x0+0], rows=6, cols=3, src_row_stride=3  # op=1
  set_flag mte1, mte2, 2  # op=1
  dma.f16 l1[x0+64], gm[x0+64], extent=[24], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, mte1, 0  # op=1
  wait_flag mte2, mte1, 0  # op=1
  load2d.f16 l0b[x0+0], l1[x0+64], rows=3, cols=8, src_row_stride=8  # op=1
  set_flag mte1, cube, 0  # op=1
  wait_flag fix, cube, 0  # op=1
  wait_flag mte1, cube, 0  # op=1
  mmad l0c[x0+0], l0a[x0+0], l0b[x0+0], m1=1, k1=1, n1=1  # op=1
  set_flag cube, mte1, 0  # op=1
  set_flag cube, fix, 0  # op=1
  wait_flag mte3, fix, 1  # op=1
  wait_flag cube, fix, 0  # op=1
  fix.f16 ub[x0+0], l0c[x0+0], m=6, n=8, dst_row_stride=8  # op=1
  set_flag fix, cube, 0  # op=1
  set_flag fix, mte3, 0  # op=1
  wait_flag fix, mte3, 0  # op=1
  dma.f16 gm[x0+256], ub[x0+0], extent=[48], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte3, fix, 1  # op=1
  wait_flag mte1, mte2, 2  # op=1
  dma.f16 l1[x0+0], gm[x0+448], extent=[18], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, mte1, 0  # op=1
  wait_flag cube, mte1, 1  # op=1
  wait_flag mte2, mte1, 0  # op=1
  load2d.f16 l0a[x0+512], l1[x0+0], rows=6, cols=3, src_row_stride=3  # op=1
  set_flag mte1, mte2, 1  # op=1
  wait_flag mte1, mte2, 0  # op=1
  dma.f16 l1[x0+128], gm[x0+112], extent=[24], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, mte1, 0  # op=1
  wait_flag mte2, mte1, 0  # op=1
  load2d.f16 l0b[x0+512], l1[x0+128], rows=3, cols=8, src_row_stride=8  # op=1
  set_flag mte1, mte2, 0  # op=1
  set_flag mte1, cube, 0  # op=1
  wait_flag fix, cube, 1  # op=1
  wait_flag mte1, cube, 0  # op=1
  mmad l0c[x0+1024], l0a[x0+512], l0b[x0+512], m1=1, k1=1, n1=1  # op=1
  set_flag cube, mte1, 1  # op=1
  set_flag cube, fix, 0  # op=1
  wait_flag mte3, fix, 0  # op=1
  wait_flag cube, fix, 0  # op=1
  fix.f16 ub[x0+96], l0c[x0+1024], m=6, n=8, dst_row_stride=8  # op=1
  set_flag fix, cube, 1  # op=1
  set_flag fix, mte3, 0  # op=1
  wait_flag fix, mte3, 0  # op=1
  dma.f16 gm[x0+352], ub[x0+96], extent=[48], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte3, fix, 0  # op=1
  wait_flag mte1, mte2, 1  # op=1
  wait_flag cube, mte1, 0  # op=1
  wait_flag fix, cube, 0  # op=1
  wait_flag mte3, fix, 1  # op=1
  wait_flag cube, mte1, 1  # op=1
  wait_flag mte1, mte2, 0  # op=1
  wait_flag fix, cube, 1  # op=1
  wait_flag mte3, fix, 0  # op=1
  barrier  # op=1

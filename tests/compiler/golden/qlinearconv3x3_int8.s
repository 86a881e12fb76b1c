.program test
.gm_bytes 896
.op 0 QLinearConv_0
.buffer x kind=input addr=0x0 bytes=144 dtype=u8 shape=[1,4,6,6]
.buffer QLinearConv_out kind=output addr=0xc0 bytes=288 dtype=u8 shape=[1,8,6,6]
.buffer QLinearConv_0.w_minus_zp kind=constant addr=0x200 bytes=288 dtype=i8 shape=[8,4,3,3]
.buffer QLinearConv_0.fix_table kind=constant addr=0x340 bytes=64 dtype=i32 shape=[16]

.core 0
  dma.u8 l1[x0+0], gm[x0-7], extent=[4,8,8], dst_stride=[64,8,1], src_stride=[36,6,1], valid=[0:4,1:7,1:7], pad=100  # op=0
  dma.i8 l1[x0+256], gm[x0+512], extent=[288], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, mte1, 0  # op=0
  wait_flag mte2, mte1, 0  # op=0
  load2d.i8 l0a[x0+0], l1[x0+256], rows=8, cols=36, src_row_stride=36  # op=0
  img2col.u8 l0b[x0+0], l1[x0+0], c=4, h=8, w=8, kh=3, kw=3, oh=6, ow=6  # op=0
  set_flag mte1, cube, 0  # op=0
  wait_flag mte1, cube, 0  # op=0
  mmad l0c[x0+0], l0a[x0+0], l0b[x0+0], m1=1, k1=2, n1=3, a_dtype=i8, b_dtype=u8  # op=0
  set_flag cube, fix, 0  # op=0
  dma.i32 ub[x0+0], gm[x0+832], extent=[16], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, fix, 0  # op=0
  wait_flag mte2, fix, 0  # op=0
  wait_flag cube, fix, 0  # op=0
  fix.u8 ub[x0+64], l0c[x0+0], m=8, n=36, dst_row_stride=36, zero_point=128, per_row=1  # op=0
  set_flag fix, mte3, 0  # op=0
  wait_flag fix, mte3, 0  # op=0
  dma.u8 gm[x0+192], ub[x0+64], extent=[288], dst_stride=[1], src_stride=[1]  # op=0
  barrier  # op=0

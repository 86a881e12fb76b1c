.program test
.gm_bytes 8128
.op 0 Conv_0
.buffer x kind=input addr=0x0 bytes=1920 dtype=f16 shape=[1,8,10,12]
.buffer Conv_out kind=output addr=0x780 bytes=3840 dtype=f16 shape=[1,16,10,12]
.buffer w kind=constant addr=0x1680 bytes=2304 dtype=f16 shape=[16,8,3,3]
.buffer b kind=constant addr=0x1f80 bytes=32 dtype=f16 shape=[16]

.core 0
  dma.f16 l1[x0+0], gm[x0-26], extent=[8,12,14], dst_stride=[168,14,1], src_stride=[120,12,1], valid=[0:8,1:11,1:13]  # op=0
  dma.f16 l1[x0+2688], gm[x0+5760], extent=[1152], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, mte1, 0  # op=0
  wait_flag mte2, mte1, 0  # op=0
  load2d.f16 l0a[x0+0], l1[x0+2688], rows=16, cols=72, src_row_stride=72  # op=0
  img2col.f16 l0b[x0+0], l1[x0+0], c=8, h=12, w=14, kh=3, kw=3, oh=10, ow=12  # op=0
  set_flag mte1, cube, 0  # op=0
  wait_flag mte1, cube, 0  # op=0
  mmad l0c[x0+0], l0a[x0+0], l0b[x0+0], m1=1, k1=5, n1=8  # op=0
  set_flag cube, fix, 0  # op=0
  wait_flag cube, fix, 0  # op=0
  fix.f16 ub[x0+0], l0c[x0+0], m=16, n=120, dst_row_stride=120  # op=0
  set_flag fix, vector, 0  # op=0
  dma.f16 ub[x0+3840], gm[x0+8064], extent=[16], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  wait_flag fix, vector, 0  # op=0
  vadd.f16 ub[x0+3872]{1,120}, ub[x0+0]{1,120}, ub[x0+3840]{0,1}, count=120, repeat=16  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+1920], ub[x0+3872], extent=[1920], dst_stride=[1], src_stride=[1]  # op=0
  barrier  # op=0

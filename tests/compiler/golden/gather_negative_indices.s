.program test
.gm_bytes 384
.op 0 Gather_0
.buffer data kind=input addr=0x0 bytes=120 dtype=i32 shape=[5,6]
.buffer indices kind=input addr=0x80 bytes=24 dtype=i64 shape=[3]
.buffer Gather_out kind=output addr=0xc0 bytes=72 dtype=i32 shape=[3,6]
.buffer Gather_0.iota kind=constant addr=0x140 bytes=40 dtype=i64 shape=[5]

.core 0
  dma.i64 ub[x0+0], gm[x0+128], extent=[3], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 0  # op=0
  dma.i64 ub[x0+32], gm[x0+320], extent=[5], dst_stride=[1], src_stride=[1]  # op=0
  dma.i32 ub[x0+96], gm[x0+0], extent=[30], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 1  # op=0
  wait_flag mte2, vector, 0  # op=0
  vdup.i64 ub[x0+224]{1,3}, 0, count=3  # op=0
  vcmp_lt.i64 ub[x0+224]{1,3}, ub[x0+0]{1,0}, ub[x0+224]{1,3}, count=3  # op=0
  vadds.i64 ub[x0+384]{1,3}, ub[x0+0]{1,0}, 5, count=3  # op=0
  vsel.i64 ub[x0+544]{1,0}, ub[x0+224]{1,3}, ub[x0+384]{1,3}, ub[x0+0]{1,0}, count=3  # op=0
  wait_flag mte2, vector, 1  # op=0
  vdup.i32 ub[x0+576]{1,0}, 0, count=18  # op=0
  li x1, 0  # op=0
L13:
  muli x2, x1, 8  # op=0
  vcmp_eq.i64 ub[x0+224]{1,6}, ub[x0+544]{0,1}, ub[x2+32]{0,0}, count=6, repeat=3  # op=0
  vdup.i32 ub[x0+384]{1,6}, 0, count=6, repeat=3  # op=0
  muli x2, x1, 24  # op=0
  vsel.i32 ub[x0+672]{1,6}, ub[x0+224]{1,6}, ub[x2+96]{1,0}, ub[x0+384]{1,6}, count=6, repeat=3  # op=0
  vadd.i32 ub[x0+576]{1,6}, ub[x0+576]{1,6}, ub[x0+672]{1,6}, count=6, repeat=3  # op=0
  addi x1, x1, 1  # op=0
  blti x1, 5, L13  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.i32 gm[x0+192], ub[x0+576], extent=[18], dst_stride=[1], src_stride=[1]  # op=0
  barrier  # op=0

.program test
.gm_bytes 320
.op 0 ScatterElements_0
.buffer data kind=input addr=0x0 bytes=48 dtype=i32 shape=[3,4]
.buffer indices kind=input addr=0x40 bytes=64 dtype=i64 shape=[2,4]
.buffer updates kind=input addr=0x80 bytes=32 dtype=i32 shape=[2,4]
.buffer ScatterElements_out kind=output addr=0xc0 bytes=48 dtype=i32 shape=[3,4]
.buffer ScatterElements_0.iota kind=constant addr=0x100 bytes=24 dtype=i64 shape=[3]

.core 0
  dma.i64 ub[x0+0], gm[x0+64], extent=[8], dst_stride=[1], src_stride=[1], pad=-4  # op=0
  dma.i64 ub[x0+64], gm[x0+256], extent=[3], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 0  # op=0
  dma.i32 ub[x0+96], gm[x0+128], extent=[8], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 1  # op=0
  dma.i32 ub[x0+128], gm[x0+0], extent=[12], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 2  # op=0
  wait_flag mte2, vector, 0  # op=0
  vdup.i64 ub[x0+192]{1,0}, -inf, count=12  # op=0
  li x1, 0  # op=0
L10:
  vdup.i64 ub[x0+288]{1,4}, 0, count=4, repeat=3  # op=0
  muli x2, x1, 32  # op=0
  vcmp_lt.i64 ub[x0+288]{1,4}, ub[x2+0]{1,0}, ub[x0+288]{1,4}, count=4, repeat=3  # op=0
  muli x2, x1, 32  # op=0
  vadds.i64 ub[x0+384]{1,4}, ub[x2+0]{1,0}, 3, count=4, repeat=3  # op=0
  muli x2, x1, 32  # op=0
  vsel.i64 ub[x0+480]{1,4}, ub[x0+288]{1,4}, ub[x0+384]{1,4}, ub[x2+0]{1,0}, count=4, repeat=3  # op=0
  vcmp_eq.i64 ub[x0+480]{1,4}, ub[x0+480]{1,4}, ub[x0+64]{0,1}, count=4, repeat=3  # op=0
  vdup.i64 ub[x0+288]{1,4}, -1, count=4, repeat=3  # op=0
  muli x2, x1, 8  # op=0
  vsel.i64 ub[x0+384]{1,4}, ub[x0+480]{1,4}, ub[x2+64]{0,0}, ub[x0+288]{1,4}, count=4, repeat=3  # op=0
  vmax.i64 ub[x0+192]{1,4}, ub[x0+192]{1,4}, ub[x0+384]{1,4}, count=4, repeat=3  # op=0
  addi x1, x1, 1  # op=0
  blti x1, 2, L10  # op=0
  wait_flag mte2, vector, 1  # op=0
  vdup.i32 ub[x0+576]{1,0}, 0, count=12  # op=0
  li x1, 0  # op=0
L27:
  muli x2, x1, 8  # op=0
  vcmp_eq.i64 ub[x0+288]{1,4}, ub[x2+64]{0,0}, ub[x0+192]{1,4}, count=4, repeat=3  # op=0
  vdup.i32 ub[x0+384]{1,4}, 0, count=4, repeat=3  # op=0
  muli x2, x1, 16  # op=0
  vsel.i32 ub[x0+480]{1,4}, ub[x0+288]{1,4}, ub[x2+96]{1,0}, ub[x0+384]{1,4}, count=4, repeat=3  # op=0
  vadd.i32 ub[x0+576]{1,4}, ub[x0+576]{1,4}, ub[x0+480]{1,4}, count=4, repeat=3  # op=0
  addi x1, x1, 1  # op=0
  blti x1, 2, L27  # op=0
  wait_flag mte2, vector, 2  # op=0
  vdup.i64 ub[x0+288]{1,12}, 0, count=12  # op=0
  vcmp_le.i64 ub[x0+288]{1,12}, ub[x0+288]{1,12}, ub[x0+192]{1,0}, count=12  # op=0
  vsel.i32 ub[x0+640]{1,0}, ub[x0+288]{1,12}, ub[x0+576]{1,0}, ub[x0+128]{1,0}, count=12  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.i32 gm[x0+192], ub[x0+640], extent=[12], dst_stride=[1], src_stride=[1]  # op=0
  barrier  # op=0

.program test_concat_1d_axis_0
.gm_bytes 192
.op 0 Concat_0
.buffer value0 kind=input addr=0x0 bytes=4 dtype=f16 shape=[2]
.buffer value1 kind=input addr=0x40 bytes=4 dtype=f16 shape=[2]
.buffer output kind=output addr=0x80 bytes=8 dtype=f16 shape=[4]

.core 0
  core_barrier  # op=0
  core_barrier  # op=0

.core 1
  set_flag mte3, vector, 0  # op=0
  set_flag vector, mte2, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  dma.f16 ub[x0+0], gm[x0+0], extent=[1], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vcopy.f16 ub[x0+32]{1,0}, ub[x0+0]{1,0}, count=1  # op=0
  set_flag vector, mte2, 0  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+128], ub[x0+32], extent=[1], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte3, vector, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  core_barrier  # op=0
  set_flag mte3, vector, 0  # op=0
  set_flag vector, mte2, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  dma.f16 ub[x0+0], gm[x0+64], extent=[1], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vcopy.f16 ub[x0+32]{1,0}, ub[x0+0]{1,0}, count=1  # op=0
  set_flag vector, mte2, 0  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+132], ub[x0+32], extent=[1], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte3, vector, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  core_barrier  # op=0

.core 2
  core_barrier  # op=0
  core_barrier  # op=0

.core 3
  set_flag mte3, vector, 0  # op=0
  set_flag vector, mte2, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  dma.f16 ub[x0+0], gm[x0+2], extent=[1], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vcopy.f16 ub[x0+32]{1,0}, ub[x0+0]{1,0}, count=1  # op=0
  set_flag vector, mte2, 0  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+130], ub[x0+32], extent=[1], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte3, vector, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  core_barrier  # op=0
  set_flag mte3, vector, 0  # op=0
  set_flag vector, mte2, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  dma.f16 ub[x0+0], gm[x0+66], extent=[1], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vcopy.f16 ub[x0+32]{1,0}, ub[x0+0]{1,0}, count=1  # op=0
  set_flag vector, mte2, 0  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+134], ub[x0+32], extent=[1], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte3, vector, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  core_barrier  # op=0

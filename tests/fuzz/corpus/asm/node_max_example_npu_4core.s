.program test_max_example
.gm_bytes 256
.op 0 Max_0
.buffer data_0 kind=input addr=0x0 bytes=6 dtype=f16 shape=[3]
.buffer data_1 kind=input addr=0x40 bytes=6 dtype=f16 shape=[3]
.buffer data_2 kind=input addr=0x80 bytes=6 dtype=f16 shape=[3]
.buffer result kind=output addr=0xc0 bytes=6 dtype=f16 shape=[3]

.core 0
  core_barrier  # op=0

.core 1
  set_flag mte3, vector, 0  # op=0
  set_flag vector, mte2, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  dma.f16 ub[x0+0], gm[x0+0], extent=[1], dst_stride=[1], src_stride=[1]  # op=0
  dma.f16 ub[x0+32], gm[x0+64], extent=[1], dst_stride=[1], src_stride=[1]  # op=0
  dma.f16 ub[x0+64], gm[x0+128], extent=[1], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vmax.f16 ub[x0+96]{1,1}, ub[x0+0]{1,0}, ub[x0+32]{1,0}, count=1  # op=0
  vmax.f16 ub[x0+128]{1,0}, ub[x0+96]{1,1}, ub[x0+64]{1,0}, count=1  # op=0
  set_flag vector, mte2, 0  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+192], ub[x0+128], extent=[1], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte3, vector, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  core_barrier  # op=0

.core 2
  set_flag mte3, vector, 0  # op=0
  set_flag vector, mte2, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  dma.f16 ub[x0+0], gm[x0+2], extent=[1], dst_stride=[1], src_stride=[1]  # op=0
  dma.f16 ub[x0+32], gm[x0+66], extent=[1], dst_stride=[1], src_stride=[1]  # op=0
  dma.f16 ub[x0+64], gm[x0+130], extent=[1], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vmax.f16 ub[x0+96]{1,1}, ub[x0+0]{1,0}, ub[x0+32]{1,0}, count=1  # op=0
  vmax.f16 ub[x0+128]{1,0}, ub[x0+96]{1,1}, ub[x0+64]{1,0}, count=1  # op=0
  set_flag vector, mte2, 0  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+194], ub[x0+128], extent=[1], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte3, vector, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  core_barrier  # op=0

.core 3
  set_flag mte3, vector, 0  # op=0
  set_flag vector, mte2, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  dma.f16 ub[x0+0], gm[x0+4], extent=[1], dst_stride=[1], src_stride=[1]  # op=0
  dma.f16 ub[x0+32], gm[x0+68], extent=[1], dst_stride=[1], src_stride=[1]  # op=0
  dma.f16 ub[x0+64], gm[x0+132], extent=[1], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vmax.f16 ub[x0+96]{1,1}, ub[x0+0]{1,0}, ub[x0+32]{1,0}, count=1  # op=0
  vmax.f16 ub[x0+128]{1,0}, ub[x0+96]{1,1}, ub[x0+64]{1,0}, count=1  # op=0
  set_flag vector, mte2, 0  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+196], ub[x0+128], extent=[1], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte3, vector, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  core_barrier  # op=0

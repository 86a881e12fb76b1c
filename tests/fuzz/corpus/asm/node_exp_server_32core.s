.program test_exp
.gm_bytes 256
.op 0 Exp_0
.buffer x kind=input addr=0x0 bytes=120 dtype=f16 shape=[3,4,5]
.buffer y kind=output addr=0x80 bytes=120 dtype=f16 shape=[3,4,5]

.core 0
  core_barrier  # op=0

.core 1
  core_barrier  # op=0

.core 2
  core_barrier  # op=0

.core 3
  core_barrier  # op=0

.core 4
  core_barrier  # op=0

.core 5
  core_barrier  # op=0

.core 6
  set_flag mte3, vector, 0  # op=0
  set_flag vector, mte2, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  dma.f16 ub[x0+0], gm[x0+0], extent=[12], dst_stride=[1], src_stride=[5]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vexp.f16 ub[x0+32]{1,0}, ub[x0+0]{1,0}, count=12  # op=0
  set_flag vector, mte2, 0  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+128], ub[x0+32], extent=[12], dst_stride=[5], src_stride=[1]  # op=0
  set_flag mte3, vector, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  core_barrier  # op=0

.core 7
  core_barrier  # op=0

.core 8
  core_barrier  # op=0

.core 9
  core_barrier  # op=0

.core 10
  core_barrier  # op=0

.core 11
  core_barrier  # op=0

.core 12
  set_flag mte3, vector, 0  # op=0
  set_flag vector, mte2, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  dma.f16 ub[x0+0], gm[x0+2], extent=[12], dst_stride=[1], src_stride=[5]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vexp.f16 ub[x0+32]{1,0}, ub[x0+0]{1,0}, count=12  # op=0
  set_flag vector, mte2, 0  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+130], ub[x0+32], extent=[12], dst_stride=[5], src_stride=[1]  # op=0
  set_flag mte3, vector, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  core_barrier  # op=0

.core 13
  core_barrier  # op=0

.core 14
  core_barrier  # op=0

.core 15
  core_barrier  # op=0

.core 16
  core_barrier  # op=0

.core 17
  core_barrier  # op=0

.core 18
  core_barrier  # op=0

.core 19
  set_flag mte3, vector, 0  # op=0
  set_flag vector, mte2, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  dma.f16 ub[x0+0], gm[x0+4], extent=[12], dst_stride=[1], src_stride=[5]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vexp.f16 ub[x0+32]{1,0}, ub[x0+0]{1,0}, count=12  # op=0
  set_flag vector, mte2, 0  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+132], ub[x0+32], extent=[12], dst_stride=[5], src_stride=[1]  # op=0
  set_flag mte3, vector, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  core_barrier  # op=0

.core 20
  core_barrier  # op=0

.core 21
  core_barrier  # op=0

.core 22
  core_barrier  # op=0

.core 23
  core_barrier  # op=0

.core 24
  core_barrier  # op=0

.core 25
  set_flag mte3, vector, 0  # op=0
  set_flag vector, mte2, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  dma.f16 ub[x0+0], gm[x0+6], extent=[12], dst_stride=[1], src_stride=[5]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vexp.f16 ub[x0+32]{1,0}, ub[x0+0]{1,0}, count=12  # op=0
  set_flag vector, mte2, 0  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+134], ub[x0+32], extent=[12], dst_stride=[5], src_stride=[1]  # op=0
  set_flag mte3, vector, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  core_barrier  # op=0

.core 26
  core_barrier  # op=0

.core 27
  core_barrier  # op=0

.core 28
  core_barrier  # op=0

.core 29
  core_barrier  # op=0

.core 30
  core_barrier  # op=0

.core 31
  set_flag mte3, vector, 0  # op=0
  set_flag vector, mte2, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  dma.f16 ub[x0+0], gm[x0+8], extent=[12], dst_stride=[1], src_stride=[5]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vexp.f16 ub[x0+32]{1,0}, ub[x0+0]{1,0}, count=12  # op=0
  set_flag vector, mte2, 0  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+136], ub[x0+32], extent=[12], dst_stride=[5], src_stride=[1]  # op=0
  set_flag mte3, vector, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  core_barrier  # op=0

.program test_mul
.gm_bytes 384
.op 0 Mul_0
.buffer x kind=input addr=0x0 bytes=120 dtype=f16 shape=[3,4,5]
.buffer y kind=input addr=0x80 bytes=120 dtype=f16 shape=[3,4,5]
.buffer z kind=output addr=0x100 bytes=120 dtype=f16 shape=[3,4,5]

.core 0
  set_flag mte3, vector, 0  # op=0
  set_flag vector, mte2, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  dma.f16 ub[x0+0], gm[x0+0], extent=[3,5], dst_stride=[5,1], src_stride=[20,1]  # op=0
  dma.f16 ub[x0+32], gm[x0+128], extent=[3,5], dst_stride=[5,1], src_stride=[20,1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vmul.f16 ub[x0+64]{1,0}, ub[x0+0]{1,0}, ub[x0+32]{1,0}, count=15  # op=0
  set_flag vector, mte2, 0  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+256], ub[x0+64], extent=[3,5], dst_stride=[20,1], src_stride=[5,1]  # op=0
  set_flag mte3, vector, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  core_barrier  # op=0

.core 1
  set_flag mte3, vector, 0  # op=0
  set_flag vector, mte2, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  dma.f16 ub[x0+0], gm[x0+10], extent=[3,5], dst_stride=[5,1], src_stride=[20,1]  # op=0
  dma.f16 ub[x0+32], gm[x0+138], extent=[3,5], dst_stride=[5,1], src_stride=[20,1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vmul.f16 ub[x0+64]{1,0}, ub[x0+0]{1,0}, ub[x0+32]{1,0}, count=15  # op=0
  set_flag vector, mte2, 0  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+266], ub[x0+64], extent=[3,5], dst_stride=[20,1], src_stride=[5,1]  # op=0
  set_flag mte3, vector, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  core_barrier  # op=0

.core 2
  set_flag mte3, vector, 0  # op=0
  set_flag vector, mte2, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  dma.f16 ub[x0+0], gm[x0+20], extent=[3,5], dst_stride=[5,1], src_stride=[20,1]  # op=0
  dma.f16 ub[x0+32], gm[x0+148], extent=[3,5], dst_stride=[5,1], src_stride=[20,1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vmul.f16 ub[x0+64]{1,0}, ub[x0+0]{1,0}, ub[x0+32]{1,0}, count=15  # op=0
  set_flag vector, mte2, 0  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+276], ub[x0+64], extent=[3,5], dst_stride=[20,1], src_stride=[5,1]  # op=0
  set_flag mte3, vector, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  core_barrier  # op=0

.core 3
  set_flag mte3, vector, 0  # op=0
  set_flag vector, mte2, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  dma.f16 ub[x0+0], gm[x0+30], extent=[3,5], dst_stride=[5,1], src_stride=[20,1]  # op=0
  dma.f16 ub[x0+32], gm[x0+158], extent=[3,5], dst_stride=[5,1], src_stride=[20,1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vmul.f16 ub[x0+64]{1,0}, ub[x0+0]{1,0}, ub[x0+32]{1,0}, count=15  # op=0
  set_flag vector, mte2, 0  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+286], ub[x0+64], extent=[3,5], dst_stride=[20,1], src_stride=[5,1]  # op=0
  set_flag mte3, vector, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  core_barrier  # op=0

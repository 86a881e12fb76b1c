.program test_sqrt
.gm_bytes 256
.op 0 Sqrt_0
.buffer x kind=input addr=0x0 bytes=120 dtype=f16 shape=[3,4,5]
.buffer y kind=output addr=0x80 bytes=120 dtype=f16 shape=[3,4,5]

.core 0
  dma.f16 ub[x0+0], gm[x0+0], extent=[60], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vsqrt.f16 ub[x0+128]{1,0}, ub[x0+0]{1,0}, count=60  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+128], ub[x0+128], extent=[60], dst_stride=[1], src_stride=[1]  # op=0
  barrier  # op=0

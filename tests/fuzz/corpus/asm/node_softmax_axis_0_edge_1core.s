.program test_softmax_axis_0
.gm_bytes 256
.op 0 Softmax_0
.buffer x kind=input addr=0x0 bytes=120 dtype=f16 shape=[3,4,5]
.buffer y kind=output addr=0x80 bytes=120 dtype=f16 shape=[3,4,5]

.core 0
  dma.f16 ub[x0+0], gm[x0+0], extent=[60], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vdup.f16 ub[x0+128]{1,0}, -inf, count=20  # op=0
  li x1, 0  # op=0
L5:
  muli x2, x1, 40  # op=0
  vmax.f16 ub[x0+128]{1,0}, ub[x0+128]{1,0}, ub[x2+0]{1,0}, count=20  # op=0
  addi x1, x1, 1  # op=0
  blti x1, 3, L5  # op=0
  vsub.f16 ub[x0+192]{1,20}, ub[x0+0]{1,20}, ub[x0+128]{1,0}, count=20, repeat=3  # op=0
  vexp.f16 ub[x0+320]{1,20}, ub[x0+192]{1,20}, count=20, repeat=3  # op=0
  vdup.f16 ub[x0+448]{1,0}, 0, count=20  # op=0
  li x1, 0  # op=0
L13:
  muli x2, x1, 40  # op=0
  vadd.f16 ub[x0+448]{1,0}, ub[x0+448]{1,0}, ub[x2+320]{1,0}, count=20  # op=0
  addi x1, x1, 1  # op=0
  blti x1, 3, L13  # op=0
  vdiv.f16 ub[x0+512]{1,20}, ub[x0+320]{1,20}, ub[x0+448]{1,0}, count=20, repeat=3  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+128], ub[x0+512], extent=[60], dst_stride=[1], src_stride=[1]  # op=0
  barrier  # op=0

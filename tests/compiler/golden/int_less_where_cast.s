.program test
.gm_bytes 832
.op 0 Less_0
.op 1 Where_1
.op 2 Cast_2
.buffer x kind=input addr=0x0 bytes=160 dtype=i32 shape=[2,20]
.buffer y kind=input addr=0xc0 bytes=160 dtype=i32 shape=[2,20]
.buffer Less_out0 kind=scratch addr=0x180 bytes=40 dtype=bool shape=[2,20]
.buffer Where_out1 kind=scratch addr=0x1c0 bytes=160 dtype=i32 shape=[2,20]
.buffer Cast_out2 kind=output addr=0x280 bytes=160 dtype=f32 shape=[2,20]

.core 0
  dma.i32 ub[x0+0], gm[x0+0], extent=[40], dst_stride=[1], src_stride=[1]  # op=0
  dma.i32 ub[x0+160], gm[x0+192], extent=[40], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vcmp_lt.i32 ub[x0+320]{1,0}, ub[x0+0]{1,0}, ub[x0+160]{1,0}, count=40  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.bool gm[x0+384], ub[x0+320], extent=[40], dst_stride=[1], src_stride=[1]  # op=0
  barrier  # op=0
  dma.bool ub[x0+0], gm[x0+384], extent=[40], dst_stride=[1], src_stride=[1]  # op=1
  dma.i32 ub[x0+64], gm[x0+0], extent=[40], dst_stride=[1], src_stride=[1]  # op=1
  dma.i32 ub[x0+224], gm[x0+192], extent=[40], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, vector, 0  # op=1
  wait_flag mte2, vector, 0  # op=1
  vsel.i32 ub[x0+384]{1,0}, ub[x0+0]{1,0}, ub[x0+64]{1,0}, ub[x0+224]{1,0}, count=40  # op=1
  set_flag vector, mte3, 0  # op=1
  wait_flag vector, mte3, 0  # op=1
  dma.i32 gm[x0+448], ub[x0+384], extent=[40], dst_stride=[1], src_stride=[1]  # op=1
  barrier  # op=1
  dma.i32 ub[x0+0], gm[x0+448], extent=[40], dst_stride=[1], src_stride=[1]  # op=2
  set_flag mte2, vector, 0  # op=2
  wait_flag mte2, vector, 0  # op=2
  vconv.f32 ub[x0+160]{1,0}, ub[x0+0]{1,0}, count=40, src_dtype=i32  # op=2
  set_flag vector, mte3, 0  # op=2
  wait_flag vector, mte3, 0  # op=2
  dma.f32 gm[x0+640], ub[x0+160], extent=[40], dst_stride=[1], src_stride=[1]  # op=2
  barrier  # op=2

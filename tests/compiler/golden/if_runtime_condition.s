.program g
.gm_bytes 2176
.op 0 if/else_taken
.op 1 if/then/tanh
.op 2 if/else/minus
.op 3 if_out0
.buffer x kind=input addr=0x0 bytes=512 dtype=f32 shape=[2,64]
.buffer c kind=input addr=0x200 bytes=1 dtype=bool shape=[]
.buffer if/else_taken kind=scratch addr=0x240 bytes=1 dtype=bool shape=[]
.buffer if/then/a kind=scratch addr=0x280 bytes=512 dtype=f32 shape=[2,64]
.buffer if/else/b kind=scratch addr=0x480 bytes=512 dtype=f32 shape=[2,64]
.buffer y kind=output addr=0x680 bytes=512 dtype=f32 shape=[2,64]

.core 0
  dma.bool ub[x0+0], gm[x0+512], extent=[1], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vnot.bool ub[x0+32]{1,0}, ub[x0+0]{1,0}, count=1  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.bool gm[x0+576], ub[x0+32], extent=[1], dst_stride=[1], src_stride=[1]  # op=0
  core_barrier  # op=0
  lbu x1, x0, 512  # op=1
  blti x1, 1, L32  # op=1
  set_flag mte3, vector, 0  # op=1
  set_flag vector, mte2, 0  # op=1
  wait_flag vector, mte2, 0  # op=1
  dma.f32 ub[x0+0], gm[x0+0], extent=[64], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, vector, 0  # op=1
  wait_flag mte2, vector, 0  # op=1
  vadds.f32 ub[x0+256]{1,0}, ub[x0+0]{1,0}, 1, count=64  # op=1
  set_flag vector, mte2, 0  # op=1
  wait_flag mte3, vector, 0  # op=1
  vmuls.f32 ub[x0+512]{1,0}, ub[x0+256]{1,0}, -2, count=64  # op=1
  vexp.f32 ub[x0+512]{1,0}, ub[x0+512]{1,0}, count=64  # op=1
  vadds.f32 ub[x0+512]{1,0}, ub[x0+512]{1,0}, 1, count=64  # op=1
  vrec.f32 ub[x0+512]{1,0}, ub[x0+512]{1,0}, count=64  # op=1
  vmuls.f32 ub[x0+512]{1,0}, ub[x0+512]{1,0}, 2, count=64  # op=1
  vadds.f32 ub[x0+512]{1,0}, ub[x0+512]{1,0}, -1, count=64  # op=1
  set_flag vector, mte3, 0  # op=1
  wait_flag vector, mte3, 0  # op=1
  dma.f32 gm[x0+640], ub[x0+512], extent=[64], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte3, vector, 0  # op=1
  wait_flag vector, mte2, 0  # op=1
  wait_flag mte3, vector, 0  # op=1
  core_barrier  # op=1
L32:
  lbu x1, x0, 576  # op=2
  blti x1, 1, L50  # op=2
  set_flag mte3, vector, 0  # op=2
  set_flag vector, mte2, 0  # op=2
  wait_flag vector, mte2, 0  # op=2
  dma.f32 ub[x0+0], gm[x0+0], extent=[64], dst_stride=[1], src_stride=[1]  # op=2
  set_flag mte2, vector, 0  # op=2
  wait_flag mte3, vector, 0  # op=2
  wait_flag mte2, vector, 0  # op=2
  vadds.f32 ub[x0+256]{1,0}, ub[x0+0]{1,0}, -1, count=64  # op=2
  set_flag vector, mte2, 0  # op=2
  set_flag vector, mte3, 0  # op=2
  wait_flag vector, mte3, 0  # op=2
  dma.f32 gm[x0+1152], ub[x0+256], extent=[64], dst_stride=[1], src_stride=[1]  # op=2
  set_flag mte3, vector, 0  # op=2
  wait_flag vector, mte2, 0  # op=2
  wait_flag mte3, vector, 0  # op=2
  core_barrier  # op=2
L50:
  set_flag mte3, vector, 0  # op=3
  set_flag vector, mte2, 0  # op=3
  wait_flag vector, mte2, 0  # op=3
  dma.bool ub[x0+0], gm[x0+512], extent=[1], dst_stride=[1], src_stride=[1]  # op=3
  dma.f32 ub[x0+32], gm[x0+640], extent=[64], dst_stride=[1], src_stride=[1]  # op=3
  dma.f32 ub[x0+288], gm[x0+1152], extent=[64], dst_stride=[1], src_stride=[1]  # op=3
  set_flag mte2, vector, 0  # op=3
  wait_flag mte3, vector, 0  # op=3
  wait_flag mte2, vector, 0  # op=3
  vsel.f32 ub[x0+544]{1,0}, ub[x0+0]{0,0}, ub[x0+32]{1,0}, ub[x0+288]{1,0}, count=64  # op=3
  set_flag vector, mte2, 0  # op=3
  set_flag vector, mte3, 0  # op=3
  wait_flag vector, mte3, 0  # op=3
  dma.f32 gm[x0+1664], ub[x0+544], extent=[64], dst_stride=[1], src_stride=[1]  # op=3
  set_flag mte3, vector, 0  # op=3
  wait_flag vector, mte2, 0  # op=3
  wait_flag mte3, vector, 0  # op=3
  core_barrier  # op=3

.core 1
  core_barrier  # op=0
  lbu x1, x0, 512  # op=1
  blti x1, 1, L25  # op=1
  set_flag mte3, vector, 0  # op=1
  set_flag vector, mte2, 0  # op=1
  wait_flag vector, mte2, 0  # op=1
  dma.f32 ub[x0+0], gm[x0+256], extent=[64], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, vector, 0  # op=1
  wait_flag mte2, vector, 0  # op=1
  vadds.f32 ub[x0+256]{1,0}, ub[x0+0]{1,0}, 1, count=64  # op=1
  set_flag vector, mte2, 0  # op=1
  wait_flag mte3, vector, 0  # op=1
  vmuls.f32 ub[x0+512]{1,0}, ub[x0+256]{1,0}, -2, count=64  # op=1
  vexp.f32 ub[x0+512]{1,0}, ub[x0+512]{1,0}, count=64  # op=1
  vadds.f32 ub[x0+512]{1,0}, ub[x0+512]{1,0}, 1, count=64  # op=1
  vrec.f32 ub[x0+512]{1,0}, ub[x0+512]{1,0}, count=64  # op=1
  vmuls.f32 ub[x0+512]{1,0}, ub[x0+512]{1,0}, 2, count=64  # op=1
  vadds.f32 ub[x0+512]{1,0}, ub[x0+512]{1,0}, -1, count=64  # op=1
  set_flag vector, mte3, 0  # op=1
  wait_flag vector, mte3, 0  # op=1
  dma.f32 gm[x0+896], ub[x0+512], extent=[64], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte3, vector, 0  # op=1
  wait_flag vector, mte2, 0  # op=1
  wait_flag mte3, vector, 0  # op=1
  core_barrier  # op=1
L25:
  lbu x1, x0, 576  # op=2
  blti x1, 1, L43  # op=2
  set_flag mte3, vector, 0  # op=2
  set_flag vector, mte2, 0  # op=2
  wait_flag vector, mte2, 0  # op=2
  dma.f32 ub[x0+0], gm[x0+256], extent=[64], dst_stride=[1], src_stride=[1]  # op=2
  set_flag mte2, vector, 0  # op=2
  wait_flag mte3, vector, 0  # op=2
  wait_flag mte2, vector, 0  # op=2
  vadds.f32 ub[x0+256]{1,0}, ub[x0+0]{1,0}, -1, count=64  # op=2
  set_flag vector, mte2, 0  # op=2
  set_flag vector, mte3, 0  # op=2
  wait_flag vector, mte3, 0  # op=2
  dma.f32 gm[x0+1408], ub[x0+256], extent=[64], dst_stride=[1], src_stride=[1]  # op=2
  set_flag mte3, vector, 0  # op=2
  wait_flag vector, mte2, 0  # op=2
  wait_flag mte3, vector, 0  # op=2
  core_barrier  # op=2
L43:
  set_flag mte3, vector, 0  # op=3
  set_flag vector, mte2, 0  # op=3
  wait_flag vector, mte2, 0  # op=3
  dma.bool ub[x0+0], gm[x0+512], extent=[1], dst_stride=[1], src_stride=[1]  # op=3
  dma.f32 ub[x0+32], gm[x0+896], extent=[64], dst_stride=[1], src_stride=[1]  # op=3
  dma.f32 ub[x0+288], gm[x0+1408], extent=[64], dst_stride=[1], src_stride=[1]  # op=3
  set_flag mte2, vector, 0  # op=3
  wait_flag mte3, vector, 0  # op=3
  wait_flag mte2, vector, 0  # op=3
  vsel.f32 ub[x0+544]{1,0}, ub[x0+0]{0,0}, ub[x0+32]{1,0}, ub[x0+288]{1,0}, count=64  # op=3
  set_flag vector, mte2, 0  # op=3
  set_flag vector, mte3, 0  # op=3
  wait_flag vector, mte3, 0  # op=3
  dma.f32 gm[x0+1920], ub[x0+544], extent=[64], dst_stride=[1], src_stride=[1]  # op=3
  set_flag mte3, vector, 0  # op=3
  wait_flag vector, mte2, 0  # op=3
  wait_flag mte3, vector, 0  # op=3
  core_barrier  # op=3

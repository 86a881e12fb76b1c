.program test_erf
.gm_bytes 12288
.op 0 Erf_0
.buffer x kind=input addr=0x0 bytes=6144 dtype=f16 shape=[1,3,32,32]
.buffer y kind=output addr=0x1800 bytes=6144 dtype=f16 shape=[1,3,32,32]

.core 0
  set_flag mte3, vector, 0  # op=0
  set_flag vector, mte2, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  dma.f16 ub[x0+0], gm[x0+0], extent=[3,256], dst_stride=[256,1], src_stride=[1024,1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vabs.f16 ub[x0+1536]{1,768}, ub[x0+0]{1,0}, count=768  # op=0
  vmuls.f16 ub[x0+1536]{1,768}, ub[x0+1536]{1,768}, 0.3275911, count=768  # op=0
  vadds.f16 ub[x0+1536]{1,768}, ub[x0+1536]{1,768}, 1, count=768  # op=0
  vrec.f16 ub[x0+1536]{1,768}, ub[x0+1536]{1,768}, count=768  # op=0
  vmuls.f16 ub[x0+3072]{1,768}, ub[x0+1536]{1,768}, 1.0614054, count=768  # op=0
  vadds.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, -1.4531521, count=768  # op=0
  vmul.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, ub[x0+1536]{1,768}, count=768  # op=0
  vadds.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, 1.4214138, count=768  # op=0
  vmul.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, ub[x0+1536]{1,768}, count=768  # op=0
  vadds.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, -0.28449672, count=768  # op=0
  vmul.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, ub[x0+1536]{1,768}, count=768  # op=0
  vadds.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, 0.2548296, count=768  # op=0
  vmul.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, ub[x0+1536]{1,768}, count=768  # op=0
  vmul.f16 ub[x0+1536]{1,768}, ub[x0+0]{1,0}, ub[x0+0]{1,0}, count=768  # op=0
  vmuls.f16 ub[x0+1536]{1,768}, ub[x0+1536]{1,768}, -1, count=768  # op=0
  vexp.f16 ub[x0+1536]{1,768}, ub[x0+1536]{1,768}, count=768  # op=0
  vmul.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, ub[x0+1536]{1,768}, count=768  # op=0
  vmuls.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, -1, count=768  # op=0
  vadds.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, 1, count=768  # op=0
  vmuls.f16 ub[x0+1536]{1,768}, ub[x0+0]{1,0}, 1e+30, count=768  # op=0
  vmaxs.f16 ub[x0+1536]{1,768}, ub[x0+1536]{1,768}, -1, count=768  # op=0
  vmins.f16 ub[x0+1536]{1,768}, ub[x0+1536]{1,768}, 1, count=768  # op=0
  vmul.f16 ub[x0+4608]{1,0}, ub[x0+3072]{1,768}, ub[x0+1536]{1,768}, count=768  # op=0
  set_flag vector, mte2, 0  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+6144], ub[x0+4608], extent=[3,256], dst_stride=[1024,1], src_stride=[256,1]  # op=0
  set_flag mte3, vector, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  core_barrier  # op=0

.core 1
  set_flag mte3, vector, 0  # op=0
  set_flag vector, mte2, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  dma.f16 ub[x0+0], gm[x0+512], extent=[3,256], dst_stride=[256,1], src_stride=[1024,1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vabs.f16 ub[x0+1536]{1,768}, ub[x0+0]{1,0}, count=768  # op=0
  vmuls.f16 ub[x0+1536]{1,768}, ub[x0+1536]{1,768}, 0.3275911, count=768  # op=0
  vadds.f16 ub[x0+1536]{1,768}, ub[x0+1536]{1,768}, 1, count=768  # op=0
  vrec.f16 ub[x0+1536]{1,768}, ub[x0+1536]{1,768}, count=768  # op=0
  vmuls.f16 ub[x0+3072]{1,768}, ub[x0+1536]{1,768}, 1.0614054, count=768  # op=0
  vadds.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, -1.4531521, count=768  # op=0
  vmul.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, ub[x0+1536]{1,768}, count=768  # op=0
  vadds.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, 1.4214138, count=768  # op=0
  vmul.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, ub[x0+1536]{1,768}, count=768  # op=0
  vadds.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, -0.28449672, count=768  # op=0
  vmul.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, ub[x0+1536]{1,768}, count=768  # op=0
  vadds.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, 0.2548296, count=768  # op=0
  vmul.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, ub[x0+1536]{1,768}, count=768  # op=0
  vmul.f16 ub[x0+1536]{1,768}, ub[x0+0]{1,0}, ub[x0+0]{1,0}, count=768  # op=0
  vmuls.f16 ub[x0+1536]{1,768}, ub[x0+1536]{1,768}, -1, count=768  # op=0
  vexp.f16 ub[x0+1536]{1,768}, ub[x0+1536]{1,768}, count=768  # op=0
  vmul.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, ub[x0+1536]{1,768}, count=768  # op=0
  vmuls.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, -1, count=768  # op=0
  vadds.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, 1, count=768  # op=0
  vmuls.f16 ub[x0+1536]{1,768}, ub[x0+0]{1,0}, 1e+30, count=768  # op=0
  vmaxs.f16 ub[x0+1536]{1,768}, ub[x0+1536]{1,768}, -1, count=768  # op=0
  vmins.f16 ub[x0+1536]{1,768}, ub[x0+1536]{1,768}, 1, count=768  # op=0
  vmul.f16 ub[x0+4608]{1,0}, ub[x0+3072]{1,768}, ub[x0+1536]{1,768}, count=768  # op=0
  set_flag vector, mte2, 0  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+6656], ub[x0+4608], extent=[3,256], dst_stride=[1024,1], src_stride=[256,1]  # op=0
  set_flag mte3, vector, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  core_barrier  # op=0

.core 2
  set_flag mte3, vector, 0  # op=0
  set_flag vector, mte2, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  dma.f16 ub[x0+0], gm[x0+1024], extent=[3,256], dst_stride=[256,1], src_stride=[1024,1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vabs.f16 ub[x0+1536]{1,768}, ub[x0+0]{1,0}, count=768  # op=0
  vmuls.f16 ub[x0+1536]{1,768}, ub[x0+1536]{1,768}, 0.3275911, count=768  # op=0
  vadds.f16 ub[x0+1536]{1,768}, ub[x0+1536]{1,768}, 1, count=768  # op=0
  vrec.f16 ub[x0+1536]{1,768}, ub[x0+1536]{1,768}, count=768  # op=0
  vmuls.f16 ub[x0+3072]{1,768}, ub[x0+1536]{1,768}, 1.0614054, count=768  # op=0
  vadds.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, -1.4531521, count=768  # op=0
  vmul.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, ub[x0+1536]{1,768}, count=768  # op=0
  vadds.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, 1.4214138, count=768  # op=0
  vmul.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, ub[x0+1536]{1,768}, count=768  # op=0
  vadds.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, -0.28449672, count=768  # op=0
  vmul.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, ub[x0+1536]{1,768}, count=768  # op=0
  vadds.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, 0.2548296, count=768  # op=0
  vmul.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, ub[x0+1536]{1,768}, count=768  # op=0
  vmul.f16 ub[x0+1536]{1,768}, ub[x0+0]{1,0}, ub[x0+0]{1,0}, count=768  # op=0
  vmuls.f16 ub[x0+1536]{1,768}, ub[x0+1536]{1,768}, -1, count=768  # op=0
  vexp.f16 ub[x0+1536]{1,768}, ub[x0+1536]{1,768}, count=768  # op=0
  vmul.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, ub[x0+1536]{1,768}, count=768  # op=0
  vmuls.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, -1, count=768  # op=0
  vadds.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, 1, count=768  # op=0
  vmuls.f16 ub[x0+1536]{1,768}, ub[x0+0]{1,0}, 1e+30, count=768  # op=0
  vmaxs.f16 ub[x0+1536]{1,768}, ub[x0+1536]{1,768}, -1, count=768  # op=0
  vmins.f16 ub[x0+1536]{1,768}, ub[x0+1536]{1,768}, 1, count=768  # op=0
  vmul.f16 ub[x0+4608]{1,0}, ub[x0+3072]{1,768}, ub[x0+1536]{1,768}, count=768  # op=0
  set_flag vector, mte2, 0  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+7168], ub[x0+4608], extent=[3,256], dst_stride=[1024,1], src_stride=[256,1]  # op=0
  set_flag mte3, vector, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  core_barrier  # op=0

.core 3
  set_flag mte3, vector, 0  # op=0
  set_flag vector, mte2, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  dma.f16 ub[x0+0], gm[x0+1536], extent=[3,256], dst_stride=[256,1], src_stride=[1024,1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vabs.f16 ub[x0+1536]{1,768}, ub[x0+0]{1,0}, count=768  # op=0
  vmuls.f16 ub[x0+1536]{1,768}, ub[x0+1536]{1,768}, 0.3275911, count=768  # op=0
  vadds.f16 ub[x0+1536]{1,768}, ub[x0+1536]{1,768}, 1, count=768  # op=0
  vrec.f16 ub[x0+1536]{1,768}, ub[x0+1536]{1,768}, count=768  # op=0
  vmuls.f16 ub[x0+3072]{1,768}, ub[x0+1536]{1,768}, 1.0614054, count=768  # op=0
  vadds.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, -1.4531521, count=768  # op=0
  vmul.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, ub[x0+1536]{1,768}, count=768  # op=0
  vadds.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, 1.4214138, count=768  # op=0
  vmul.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, ub[x0+1536]{1,768}, count=768  # op=0
  vadds.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, -0.28449672, count=768  # op=0
  vmul.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, ub[x0+1536]{1,768}, count=768  # op=0
  vadds.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, 0.2548296, count=768  # op=0
  vmul.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, ub[x0+1536]{1,768}, count=768  # op=0
  vmul.f16 ub[x0+1536]{1,768}, ub[x0+0]{1,0}, ub[x0+0]{1,0}, count=768  # op=0
  vmuls.f16 ub[x0+1536]{1,768}, ub[x0+1536]{1,768}, -1, count=768  # op=0
  vexp.f16 ub[x0+1536]{1,768}, ub[x0+1536]{1,768}, count=768  # op=0
  vmul.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, ub[x0+1536]{1,768}, count=768  # op=0
  vmuls.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, -1, count=768  # op=0
  vadds.f16 ub[x0+3072]{1,768}, ub[x0+3072]{1,768}, 1, count=768  # op=0
  vmuls.f16 ub[x0+1536]{1,768}, ub[x0+0]{1,0}, 1e+30, count=768  # op=0
  vmaxs.f16 ub[x0+1536]{1,768}, ub[x0+1536]{1,768}, -1, count=768  # op=0
  vmins.f16 ub[x0+1536]{1,768}, ub[x0+1536]{1,768}, 1, count=768  # op=0
  vmul.f16 ub[x0+4608]{1,0}, ub[x0+3072]{1,768}, ub[x0+1536]{1,768}, count=768  # op=0
  set_flag vector, mte2, 0  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+7680], ub[x0+4608], extent=[3,256], dst_stride=[1024,1], src_stride=[256,1]  # op=0
  set_flag mte3, vector, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  core_barrier  # op=0

.program "Extracted from {Model from PaddlePaddle.}"
.gm_bytes 148672
.op 0 p2o.Add.42
.op 1 p2o.Conv.7
.op 2 p2o.Mul.38
.buffer p2o.Add.41 kind=input addr=0x0 bytes=36864 dtype=f16 shape=[1,48,16,24]
.buffer p2o.Add.39 kind=input addr=0x9000 bytes=36864 dtype=f16 shape=[1,48,16,24]
.buffer p2o.Add.43 kind=output addr=0x12000 bytes=36864 dtype=f16 shape=[1,48,16,24]
.buffer p2o.Add.47 kind=scratch addr=0x1b000 bytes=9216 dtype=f16 shape=[1,48,8,12]
.buffer conv2d_400.w_0.bn kind=constant addr=0x1d400 bytes=864 dtype=f16 shape=[48,1,3,3]
.buffer conv2d_400.w_0.bn_bias kind=constant addr=0x1d780 bytes=96 dtype=f16 shape=[48]
.buffer conv2d_401.w_0.bn kind=constant addr=0x1d800 bytes=9216 dtype=f16 shape=[96,48,1,1]
.buffer conv2d_401.w_0.bn_bias kind=constant addr=0x1fc00 bytes=192 dtype=f16 shape=[96]
.buffer p2o.Mul.39 kind=output addr=0x1fcc0 bytes=18432 dtype=f16 shape=[1,96,8,12]

.core 0
  set_flag mte3, vector, 0  # op=0
  set_flag vector, mte2, 1  # op=0
  set_flag vector, mte2, 2  # op=0
  set_flag mte3, vector, 1  # op=0
  set_flag vector, mte2, 0  # op=0
  set_flag vector, mte2, 3  # op=0
  li x1, 0  # op=0
L7:
  wait_flag vector, mte2, 3  # op=0
  muli x2, x1, 15360  # op=0
  dma.f16 ub[x0+0], gm[x2+0], extent=[3840], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  muli x2, x1, 15360  # op=0
  dma.f16 ub[x0+7680], gm[x2+36864], extent=[3840], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 1  # op=0
  wait_flag mte2, vector, 0  # op=0
  vmaxs.f16 ub[x0+15360]{1,3840}, ub[x0+0]{1,0}, 0, count=3840  # op=0
  vmins.f16 ub[x0+23040]{1,0}, ub[x0+15360]{1,3840}, 6, count=3840  # op=0
  set_flag vector, mte2, 3  # op=0
  wait_flag mte2, vector, 1  # op=0
  vmul.f16 ub[x0+30720]{1,0}, ub[x0+7680]{1,0}, ub[x0+23040]{1,0}, count=3840  # op=0
  set_flag vector, mte2, 0  # op=0
  vmuls.f16 ub[x0+38400]{1,0}, ub[x0+30720]{1,0}, 0.16666667, count=3840  # op=0
  vmuls.f16 ub[x0+46080]{1,0}, ub[x0+38400]{1,0}, 0.9662902, count=3840  # op=0
  wait_flag mte3, vector, 1  # op=0
  vadds.f16 ub[x0+53760]{1,0}, ub[x0+46080]{1,0}, -0.44478875, count=3840  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  muli x2, x1, 15360  # op=0
  dma.f16 gm[x2+73728], ub[x0+53760], extent=[3840], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte3, vector, 1  # op=0
  wait_flag vector, mte2, 2  # op=0
  muli x2, x1, 15360  # op=0
  dma.f16 ub[x0+61440], gm[x2+7680], extent=[3840], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag vector, mte2, 1  # op=0
  muli x2, x1, 15360  # op=0
  dma.f16 ub[x0+69120], gm[x2+44544], extent=[3840], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 1  # op=0
  wait_flag mte2, vector, 0  # op=0
  vmaxs.f16 ub[x0+76800]{1,3840}, ub[x0+61440]{1,0}, 0, count=3840  # op=0
  vmins.f16 ub[x0+84480]{1,0}, ub[x0+76800]{1,3840}, 6, count=3840  # op=0
  set_flag vector, mte2, 2  # op=0
  wait_flag mte2, vector, 1  # op=0
  vmul.f16 ub[x0+92160]{1,0}, ub[x0+69120]{1,0}, ub[x0+84480]{1,0}, count=3840  # op=0
  set_flag vector, mte2, 1  # op=0
  vmuls.f16 ub[x0+99840]{1,0}, ub[x0+92160]{1,0}, 0.16666667, count=3840  # op=0
  vmuls.f16 ub[x0+107520]{1,0}, ub[x0+99840]{1,0}, 0.9662902, count=3840  # op=0
  wait_flag mte3, vector, 0  # op=0
  vadds.f16 ub[x0+115200]{1,0}, ub[x0+107520]{1,0}, -0.44478875, count=3840  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  muli x2, x1, 15360  # op=0
  dma.f16 gm[x2+81408], ub[x0+115200], extent=[3840], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte3, vector, 0  # op=0
  addi x1, x1, 1  # op=0
  blti x1, 2, L7  # op=0
  wait_flag vector, mte2, 3  # op=0
  wait_flag vector, mte2, 0  # op=0
  wait_flag mte3, vector, 1  # op=0
  wait_flag vector, mte2, 2  # op=0
  wait_flag vector, mte2, 1  # op=0
  wait_flag mte3, vector, 0  # op=0
  set_flag vector, mte2, 4  # op=0
  set_flag mte3, vector, 2  # op=0
  wait_flag vector, mte2, 4  # op=0
  dma.f16 ub[x0+0], gm[x0+30720], extent=[3072], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 0  # op=0
  dma.f16 ub[x0+7680], gm[x0+67584], extent=[3072], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 1  # op=0
  wait_flag mte2, vector, 0  # op=0
  vmaxs.f16 ub[x0+15360]{1,3072}, ub[x0+0]{1,0}, 0, count=3072  # op=0
  vmins.f16 ub[x0+23040]{1,0}, ub[x0+15360]{1,3072}, 6, count=3072  # op=0
  wait_flag mte2, vector, 1  # op=0
  vmul.f16 ub[x0+30720]{1,0}, ub[x0+7680]{1,0}, ub[x0+23040]{1,0}, count=3072  # op=0
  vmuls.f16 ub[x0+38400]{1,0}, ub[x0+30720]{1,0}, 0.16666667, count=3072  # op=0
  vmuls.f16 ub[x0+46080]{1,0}, ub[x0+38400]{1,0}, 0.9662902, count=3072  # op=0
  wait_flag mte3, vector, 2  # op=0
  vadds.f16 ub[x0+53760]{1,0}, ub[x0+46080]{1,0}, -0.44478875, count=3072  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+104448], ub[x0+53760], extent=[3072], dst_stride=[1], src_stride=[1]  # op=0
  barrier  # op=0
  set_flag mte3, vector, 1  # op=1
  set_flag vector, mte2, 3  # op=1
  set_flag vector, mte2, 2  # op=1
  set_flag mte3, vector, 0  # op=1
  set_flag vector, mte2, 1  # op=1
  set_flag vector, mte2, 0  # op=1
  wait_flag vector, mte2, 0  # op=1
  dma.f16 ub[x0+0], gm[x0+73678], extent=[21,17,25], dst_stride=[425,25,1], src_stride=[384,24,1], valid=[0:21,1:17,1:25]  # op=1
  dma.f16 ub[x0+17856], gm[x0+119808], extent=[189], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, vector, 0  # op=1
  wait_flag vector, mte2, 1  # op=1
  dma.f16 ub[x0+18240], gm[x0+120704], extent=[21], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, vector, 1  # op=1
  wait_flag mte2, vector, 0  # op=1
  vdup.f16 ub[x0+18304]{1,0}, 0, count=2016  # op=1
  li x1, 0  # op=1
L99:
  li x2, 0  # op=1
L100:
  li x3, 0  # op=1
L101:
  muli x4, x1, 24  # op=1
  muli x5, x2, 50  # op=1
  muli x6, x3, 2  # op=1
  add x5, x5, x6  # op=1
  muli x6, x1, 100  # op=1
  add x5, x5, x6  # op=1
  muli x6, x2, 6  # op=1
  muli x7, x3, 2  # op=1
  add x6, x6, x7  # op=1
  vmla.f16 ub[x4+18304]{1,96}, ub[x5+0]{2,425}, ub[x6+17856]{0,9}, count=12, repeat=21  # op=1
  addi x3, x3, 1  # op=1
  blti x3, 3, L101  # op=1
  addi x2, x2, 1  # op=1
  blti x2, 3, L100  # op=1
  addi x1, x1, 1  # op=1
  blti x1, 8, L99  # op=1
  set_flag vector, mte2, 0  # op=1
  wait_flag mte3, vector, 0  # op=1
  wait_flag mte2, vector, 1  # op=1
  vadd.f16 ub[x0+22336]{1,96}, ub[x0+18304]{1,96}, ub[x0+18240]{0,1}, count=96, repeat=21  # op=1
  set_flag vector, mte2, 1  # op=1
  set_flag vector, mte3, 0  # op=1
  wait_flag vector, mte3, 0  # op=1
  dma.f16 gm[x0+110592], ub[x0+22336], extent=[2016], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte3, vector, 0  # op=1
  wait_flag vector, mte2, 2  # op=1
  dma.f16 ub[x0+26368], gm[x0+89806], extent=[21,17,25], dst_stride=[425,25,1], src_stride=[384,24,1], valid=[0:21,1:17,1:25]  # op=1
  dma.f16 ub[x0+44224], gm[x0+120186], extent=[189], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, vector, 0  # op=1
  wait_flag vector, mte2, 3  # op=1
  dma.f16 ub[x0+44608], gm[x0+120746], extent=[21], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, vector, 1  # op=1
  wait_flag mte2, vector, 0  # op=1
  vdup.f16 ub[x0+44672]{1,0}, 0, count=2016  # op=1
  li x1, 0  # op=1
L136:
  li x2, 0  # op=1
L137:
  li x3, 0  # op=1
L138:
  muli x4, x1, 24  # op=1
  muli x5, x2, 50  # op=1
  muli x6, x3, 2  # op=1
  add x5, x5, x6  # op=1
  muli x6, x1, 100  # op=1
  add x5, x5, x6  # op=1
  muli x6, x2, 6  # op=1
  muli x7, x3, 2  # op=1
  add x6, x6, x7  # op=1
  vmla.f16 ub[x4+44672]{1,96}, ub[x5+26368]{2,425}, ub[x6+44224]{0,9}, count=12, repeat=21  # op=1
  addi x3, x3, 1  # op=1
  blti x3, 3, L138  # op=1
  addi x2, x2, 1  # op=1
  blti x2, 3, L137  # op=1
  addi x1, x1, 1  # op=1
  blti x1, 8, L136  # op=1
  set_flag vector, mte2, 2  # op=1
  wait_flag mte3, vector, 1  # op=1
  wait_flag mte2, vector, 1  # op=1
  vadd.f16 ub[x0+48704]{1,96}, ub[x0+44672]{1,96}, ub[x0+44608]{0,1}, count=96, repeat=21  # op=1
  set_flag vector, mte2, 3  # op=1
  set_flag vector, mte3, 0  # op=1
  wait_flag vector, mte3, 0  # op=1
  dma.f16 gm[x0+114624], ub[x0+48704], extent=[2016], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte3, vector, 1  # op=1
  wait_flag vector, mte2, 0  # op=1
  wait_flag vector, mte2, 1  # op=1
  wait_flag mte3, vector, 0  # op=1
  wait_flag vector, mte2, 2  # op=1
  wait_flag vector, mte2, 3  # op=1
  wait_flag mte3, vector, 1  # op=1
  set_flag vector, mte2, 4  # op=1
  set_flag mte3, vector, 2  # op=1
  wait_flag vector, mte2, 4  # op=1
  dma.f16 ub[x0+0], gm[x0+105934], extent=[6,17,25], dst_stride=[425,25,1], src_stride=[384,24,1], valid=[0:6,1:17,1:25]  # op=1
  dma.f16 ub[x0+17856], gm[x0+120564], extent=[54], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, vector, 0  # op=1
  dma.f16 ub[x0+18240], gm[x0+120788], extent=[6], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, vector, 1  # op=1
  wait_flag mte2, vector, 0  # op=1
  vdup.f16 ub[x0+18304]{1,0}, 0, count=576  # op=1
  li x1, 0  # op=1
L180:
  li x2, 0  # op=1
L181:
  li x3, 0  # op=1
L182:
  muli x4, x1, 192  # op=1
  muli x5, x2, 50  # op=1
  muli x6, x3, 2  # op=1
  add x5, x5, x6  # op=1
  muli x6, x1, 850  # op=1
  add x5, x5, x6  # op=1
  muli x6, x2, 6  # op=1
  muli x7, x3, 2  # op=1
  add x6, x6, x7  # op=1
  muli x7, x1, 18  # op=1
  add x6, x6, x7  # op=1
  vmla.f16 ub[x4+18304]{1,12}, ub[x5+0]{2,50}, ub[x6+17856]{0,0}, count=12, repeat=8  # op=1
  addi x3, x3, 1  # op=1
  blti x3, 3, L182  # op=1
  addi x2, x2, 1  # op=1
  blti x2, 3, L181  # op=1
  addi x1, x1, 1  # op=1
  blti x1, 6, L180  # op=1
  wait_flag mte2, vector, 1  # op=1
  wait_flag mte3, vector, 2  # op=1
  vadd.f16 ub[x0+22336]{1,96}, ub[x0+18304]{1,96}, ub[x0+18240]{0,1}, count=96, repeat=6  # op=1
  set_flag vector, mte3, 0  # op=1
  wait_flag vector, mte3, 0  # op=1
  dma.f16 gm[x0+118656], ub[x0+22336], extent=[576], dst_stride=[1], src_stride=[1]  # op=1
  barrier  # op=1
  dma.f16 l1[x0+0], gm[x0+120832], extent=[4608], dst_stride=[1], src_stride=[1]  # op=2
  set_flag mte2, mte1, 0  # op=2
  set_flag mte3, vector, 0  # op=2
  set_flag vector, mte2, 0  # op=2
  set_flag vector, fix, 0  # op=2
  set_flag fix, cube, 0  # op=2
  set_flag cube, mte1, 0  # op=2
  set_flag mte1, mte2, 0  # op=2
  wait_flag mte2, mte1, 0  # op=2
  li x1, 0  # op=2
L217:
  wait_flag mte1, mte2, 0  # op=2
  muli x2, x1, 96  # op=2
  dma.f16 l1[x0+9216], gm[x2+110592], extent=[48,48], dst_stride=[48,1], src_stride=[96,1]  # op=2
  set_flag mte2, mte1, 1  # op=2
  wait_flag cube, mte1, 0  # op=2
  load2d.f16 l0a[x0+0], l1[x0+0], rows=96, cols=48, src_row_stride=48  # op=2
  wait_flag mte2, mte1, 1  # op=2
  img2col.f16 l0b[x0+0], l1[x0+9216], c=48, h=4, w=12, kh=1, kw=1, oh=4, ow=12  # op=2
  set_flag mte1, mte2, 0  # op=2
  set_flag mte1, cube, 0  # op=2
  wait_flag fix, cube, 0  # op=2
  wait_flag mte1, cube, 0  # op=2
  mmad l0c[x0+0], l0a[x0+0], l0b[x0+0], m1=12, k1=3, n1=3  # op=2
  set_flag cube, mte1, 0  # op=2
  set_flag cube, fix, 0  # op=2
  wait_flag vector, fix, 0  # op=2
  wait_flag cube, fix, 0  # op=2
  fix.f16 ub[x0+0], l0c[x0+0], m=96, n=48, dst_row_stride=48  # op=2
  set_flag fix, cube, 0  # op=2
  set_flag fix, vector, 0  # op=2
  wait_flag vector, mte2, 0  # op=2
  dma.f16 ub[x0+9216], gm[x0+130048], extent=[96], dst_stride=[1], src_stride=[1]  # op=2
  set_flag mte2, vector, 0  # op=2
  wait_flag mte2, vector, 0  # op=2
  wait_flag fix, vector, 0  # op=2
  vadd.f16 ub[x0+9408]{1,48}, ub[x0+0]{1,48}, ub[x0+9216]{0,1}, count=48, repeat=96  # op=2
  set_flag vector, fix, 0  # op=2
  set_flag vector, mte2, 0  # op=2
  vmuls.f16 ub[x0+18624]{1,4608}, ub[x0+9408]{1,0}, 0.16666667, count=4608  # op=2
  vadds.f16 ub[x0+18624]{1,4608}, ub[x0+18624]{1,4608}, 0.5, count=4608  # op=2
  vmaxs.f16 ub[x0+18624]{1,4608}, ub[x0+18624]{1,4608}, 0, count=4608  # op=2
  vmins.f16 ub[x0+18624]{1,4608}, ub[x0+18624]{1,4608}, 1, count=4608  # op=2
  vmul.f16 ub[x0+27840]{1,0}, ub[x0+9408]{1,0}, ub[x0+18624]{1,4608}, count=4608  # op=2
  wait_flag mte3, vector, 0  # op=2
  vmuls.f16 ub[x0+37056]{1,0}, ub[x0+27840]{1,0}, 0.5625493, count=4608  # op=2
  set_flag vector, mte3, 0  # op=2
  wait_flag vector, mte3, 0  # op=2
  muli x2, x1, 96  # op=2
  dma.f16 gm[x2+130240], ub[x0+37056], extent=[96,48], dst_stride=[96,1], src_stride=[48,1]  # op=2
  set_flag mte3, vector, 0  # op=2
  addi x1, x1, 1  # op=2
  blti x1, 2, L217  # op=2
  wait_flag mte1, mte2, 0  # op=2
  wait_flag cube, mte1, 0  # op=2
  wait_flag fix, cube, 0  # op=2
  wait_flag vector, fix, 0  # op=2
  wait_flag vector, mte2, 0  # op=2
  wait_flag mte3, vector, 0  # op=2
  barrier  # op=2

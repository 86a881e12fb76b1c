.program "Extracted from {Model from PaddlePaddle.}"
.gm_bytes 136000
.op 0 p2o.Div.9
.op 1 p2o.Div.10
.op 2 p2o.GlobalAveragePool.10
.op 3 p2o.Relu.11
.op 4 p2o.HardSigmoid.5
.op 5 p2o.Mul.32
.op 6 p2o.Add.54
.buffer p2o.Mul.29 kind=input addr=0x0 bytes=27648 dtype=f16 shape=[1,48,3,96]
.buffer p2o.Add.45 kind=input addr=0x6c00 bytes=9216 dtype=f16 shape=[1,16,3,96]
.buffer hardswish_9.tmp_0 kind=scratch addr=0x9000 bytes=27648 dtype=f16 shape=[1,48,3,96]
.buffer conv2d_33.w_0.bn kind=constant addr=0xfc00 bytes=2400 dtype=f16 shape=[48,1,5,5]
.buffer conv2d_33.w_0.bn_bias kind=constant addr=0x10580 bytes=96 dtype=f16 shape=[48]
.buffer hardswish_10.tmp_0 kind=scratch addr=0x10600 bytes=27648 dtype=f16 shape=[1,48,3,96]
.buffer p2o.GlobalAveragePool.11 kind=scratch addr=0x17200 bytes=96 dtype=f16 shape=[1,48,1,1]
.buffer conv2d_34.w_0 kind=constant addr=0x17280 bytes=1152 dtype=f16 shape=[12,48,1,1]
.buffer conv2d_34.b_0 kind=constant addr=0x17700 bytes=24 dtype=f16 shape=[12]
.buffer relu_11.tmp_0 kind=scratch addr=0x17740 bytes=24 dtype=f16 shape=[1,12,1,1]
.buffer conv2d_35.w_0 kind=constant addr=0x17780 bytes=1152 dtype=f16 shape=[48,12,1,1]
.buffer conv2d_35.b_0 kind=constant addr=0x17c00 bytes=96 dtype=f16 shape=[48]
.buffer hardsigmoid_5.tmp_0 kind=scratch addr=0x17c80 bytes=96 dtype=f16 shape=[1,48,1,1]
.buffer p2o.Mul.33 kind=scratch addr=0x17d00 bytes=27648 dtype=f16 shape=[1,48,3,96]
.buffer conv2d_36.w_0.bn kind=constant addr=0x1e900 bytes=1536 dtype=f16 shape=[16,48,1,1]
.buffer conv2d_36.w_0.bn_bias kind=constant addr=0x1ef00 bytes=32 dtype=f16 shape=[16]
.buffer p2o.Add.55 kind=output addr=0x1ef40 bytes=9216 dtype=f16 shape=[1,16,3,96]

.core 0
  dma.f16 ub[x0+0], gm[x0+0], extent=[13824], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vmuls.f16 ub[x0+27648]{1,0}, ub[x0+0]{1,0}, 0.16666667, count=13824  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+36864], ub[x0+27648], extent=[13824], dst_stride=[1], src_stride=[1]  # op=0
  barrier  # op=0
  set_flag mte3, vector, 1  # op=1
  set_flag vector, mte2, 3  # op=1
  set_flag vector, mte2, 2  # op=1
  set_flag mte3, vector, 0  # op=1
  set_flag vector, mte2, 1  # op=1
  set_flag vector, mte2, 0  # op=1
  li x1, 0  # op=1
L15:
  wait_flag vector, mte2, 0  # op=1
  muli x2, x1, 3456  # op=1
  dma.f16 ub[x0+0], gm[x2+36476], extent=[3,7,100], dst_stride=[700,100,1], src_stride=[288,96,1], valid=[0:3,2:5,2:98]  # op=1
  muli x2, x1, 300  # op=1
  dma.f16 ub[x0+4224], gm[x2+64512], extent=[75], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, vector, 0  # op=1
  wait_flag vector, mte2, 1  # op=1
  muli x2, x1, 12  # op=1
  dma.f16 ub[x0+4384], gm[x2+66944], extent=[3], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, vector, 1  # op=1
  wait_flag mte2, vector, 0  # op=1
  vdup.f16 ub[x0+4416]{1,0}, 0, count=864  # op=1
  li x2, 0  # op=1
L28:
  li x3, 0  # op=1
L29:
  li x4, 0  # op=1
L30:
  muli x5, x2, 576  # op=1
  muli x6, x3, 200  # op=1
  muli x7, x4, 2  # op=1
  add x6, x6, x7  # op=1
  muli x7, x2, 1400  # op=1
  add x6, x6, x7  # op=1
  muli x7, x3, 10  # op=1
  muli x8, x4, 2  # op=1
  add x7, x7, x8  # op=1
  muli x8, x2, 50  # op=1
  add x7, x7, x8  # op=1
  vmla.f16 ub[x5+4416]{1,96}, ub[x6+0]{1,100}, ub[x7+4224]{0,0}, count=96, repeat=3  # op=1
  addi x4, x4, 1  # op=1
  blti x4, 5, L30  # op=1
  addi x3, x3, 1  # op=1
  blti x3, 5, L29  # op=1
  addi x2, x2, 1  # op=1
  blti x2, 3, L28  # op=1
  set_flag vector, mte2, 0  # op=1
  wait_flag mte2, vector, 1  # op=1
  vadd.f16 ub[x0+6144]{1,288}, ub[x0+4416]{1,288}, ub[x0+4384]{0,1}, count=288, repeat=3  # op=1
  set_flag vector, mte2, 1  # op=1
  wait_flag mte3, vector, 0  # op=1
  vmuls.f16 ub[x0+7872]{1,864}, ub[x0+6144]{1,0}, 0.16666667, count=864  # op=1
  vadds.f16 ub[x0+7872]{1,864}, ub[x0+7872]{1,864}, 0.5, count=864  # op=1
  vmaxs.f16 ub[x0+7872]{1,864}, ub[x0+7872]{1,864}, 0, count=864  # op=1
  vmins.f16 ub[x0+7872]{1,864}, ub[x0+7872]{1,864}, 1, count=864  # op=1
  vmul.f16 ub[x0+9600]{1,0}, ub[x0+6144]{1,0}, ub[x0+7872]{1,864}, count=864  # op=1
  set_flag vector, mte3, 0  # op=1
  wait_flag vector, mte3, 0  # op=1
  muli x2, x1, 3456  # op=1
  dma.f16 gm[x2+67072], ub[x0+9600], extent=[864], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte3, vector, 0  # op=1
  wait_flag vector, mte2, 2  # op=1
  muli x2, x1, 3456  # op=1
  dma.f16 ub[x0+11328], gm[x2+38204], extent=[3,7,100], dst_stride=[700,100,1], src_stride=[288,96,1], valid=[0:3,2:5,2:98]  # op=1
  muli x2, x1, 300  # op=1
  dma.f16 ub[x0+15552], gm[x2+64662], extent=[75], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, vector, 0  # op=1
  wait_flag vector, mte2, 3  # op=1
  muli x2, x1, 12  # op=1
  dma.f16 ub[x0+15712], gm[x2+66950], extent=[3], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, vector, 1  # op=1
  wait_flag mte2, vector, 0  # op=1
  vdup.f16 ub[x0+15744]{1,0}, 0, count=864  # op=1
  li x2, 0  # op=1
L76:
  li x3, 0  # op=1
L77:
  li x4, 0  # op=1
L78:
  muli x5, x2, 576  # op=1
  muli x6, x3, 200  # op=1
  muli x7, x4, 2  # op=1
  add x6, x6, x7  # op=1
  muli x7, x2, 1400  # op=1
  add x6, x6, x7  # op=1
  muli x7, x3, 10  # op=1
  muli x8, x4, 2  # op=1
  add x7, x7, x8  # op=1
  muli x8, x2, 50  # op=1
  add x7, x7, x8  # op=1
  vmla.f16 ub[x5+15744]{1,96}, ub[x6+11328]{1,100}, ub[x7+15552]{0,0}, count=96, repeat=3  # op=1
  addi x4, x4, 1  # op=1
  blti x4, 5, L78  # op=1
  addi x3, x3, 1  # op=1
  blti x3, 5, L77  # op=1
  addi x2, x2, 1  # op=1
  blti x2, 3, L76  # op=1
  set_flag vector, mte2, 2  # op=1
  wait_flag mte2, vector, 1  # op=1
  vadd.f16 ub[x0+17472]{1,288}, ub[x0+15744]{1,288}, ub[x0+15712]{0,1}, count=288, repeat=3  # op=1
  set_flag vector, mte2, 3  # op=1
  wait_flag mte3, vector, 1  # op=1
  vmuls.f16 ub[x0+19200]{1,864}, ub[x0+17472]{1,0}, 0.16666667, count=864  # op=1
  vadds.f16 ub[x0+19200]{1,864}, ub[x0+19200]{1,864}, 0.5, count=864  # op=1
  vmaxs.f16 ub[x0+19200]{1,864}, ub[x0+19200]{1,864}, 0, count=864  # op=1
  vmins.f16 ub[x0+19200]{1,864}, ub[x0+19200]{1,864}, 1, count=864  # op=1
  vmul.f16 ub[x0+20928]{1,0}, ub[x0+17472]{1,0}, ub[x0+19200]{1,864}, count=864  # op=1
  set_flag vector, mte3, 0  # op=1
  wait_flag vector, mte3, 0  # op=1
  muli x2, x1, 3456  # op=1
  dma.f16 gm[x2+68800], ub[x0+20928], extent=[864], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte3, vector, 1  # op=1
  addi x1, x1, 1  # op=1
  blti x1, 8, L15  # op=1
  wait_flag vector, mte2, 0  # op=1
  wait_flag vector, mte2, 1  # op=1
  wait_flag mte3, vector, 0  # op=1
  wait_flag vector, mte2, 2  # op=1
  wait_flag vector, mte2, 3  # op=1
  wait_flag mte3, vector, 1  # op=1
  barrier  # op=1
  dma.f16 ub[x0+0], gm[x0+67072], extent=[13824], dst_stride=[1], src_stride=[1]  # op=2
  set_flag mte2, vector, 0  # op=2
  wait_flag mte2, vector, 0  # op=2
  vdup.f16 ub[x0+27648]{1,0}, 0, count=48  # op=2
  vmuls.f16 ub[x0+27744]{1,288}, ub[x0+0]{1,288}, 0.0034722222, count=288, repeat=48  # op=2
  vrsum.f16 ub[x0+27648]{0,1}, ub[x0+27744]{1,288}, count=288, repeat=48  # op=2
  set_flag vector, mte3, 0  # op=2
  wait_flag vector, mte3, 0  # op=2
  dma.f16 gm[x0+94720], ub[x0+27648], extent=[48], dst_stride=[1], src_stride=[1]  # op=2
  barrier  # op=2
  dma.f16 l1[x0+0], gm[x0+94720], extent=[48], dst_stride=[1], src_stride=[1]  # op=3
  dma.f16 l1[x0+96], gm[x0+94848], extent=[576], dst_stride=[1], src_stride=[1]  # op=3
  set_flag mte2, mte1, 0  # op=3
  wait_flag mte2, mte1, 0  # op=3
  load2d.f16 l0a[x0+0], l1[x0+96], rows=12, cols=48, src_row_stride=48  # op=3
  img2col.f16 l0b[x0+0], l1[x0+0], c=48, h=1, w=1, kh=1, kw=1, oh=1, ow=1  # op=3
  set_flag mte1, cube, 0  # op=3
  wait_flag mte1, cube, 0  # op=3
  mmad l0c[x0+0], l0a[x0+0], l0b[x0+0], m1=2, k1=3, n1=1  # op=3
  set_flag cube, fix, 0  # op=3
  wait_flag cube, fix, 0  # op=3
  fix.f16 ub[x0+0], l0c[x0+0], m=12, n=1, dst_row_stride=1  # op=3
  set_flag fix, vector, 0  # op=3
  dma.f16 ub[x0+32], gm[x0+96000], extent=[12], dst_stride=[1], src_stride=[1]  # op=3
  set_flag mte2, vector, 0  # op=3
  wait_flag mte2, vector, 0  # op=3
  wait_flag fix, vector, 0  # op=3
  vadd.f16 ub[x0+64]{1,0}, ub[x0+0]{1,0}, ub[x0+32]{1,0}, count=12  # op=3
  vmaxs.f16 ub[x0+96]{1,0}, ub[x0+64]{1,0}, 0, count=12  # op=3
  set_flag vector, mte3, 0  # op=3
  wait_flag vector, mte3, 0  # op=3
  dma.f16 gm[x0+96064], ub[x0+96], extent=[12], dst_stride=[1], src_stride=[1]  # op=3
  barrier  # op=3
  dma.f16 l1[x0+0], gm[x0+96064], extent=[12], dst_stride=[1], src_stride=[1]  # op=4
  dma.f16 l1[x0+32], gm[x0+96128], extent=[576], dst_stride=[1], src_stride=[1]  # op=4
  set_flag mte2, mte1, 0  # op=4
  wait_flag mte2, mte1, 0  # op=4
  load2d.f16 l0a[x0+0], l1[x0+32], rows=48, cols=12, src_row_stride=12  # op=4
  img2col.f16 l0b[x0+0], l1[x0+0], c=12, h=1, w=1, kh=1, kw=1, oh=1, ow=1  # op=4
  set_flag mte1, cube, 0  # op=4
  wait_flag mte1, cube, 0  # op=4
  mmad l0c[x0+0], l0a[x0+0], l0b[x0+0], m1=6, k1=1, n1=1  # op=4
  set_flag cube, fix, 0  # op=4
  wait_flag cube, fix, 0  # op=4
  fix.f16 ub[x0+0], l0c[x0+0], m=48, n=1, dst_row_stride=1  # op=4
  set_flag fix, vector, 0  # op=4
  dma.f16 ub[x0+96], gm[x0+97280], extent=[48], dst_stride=[1], src_stride=[1]  # op=4
  set_flag mte2, vector, 0  # op=4
  wait_flag mte2, vector, 0  # op=4
  wait_flag fix, vector, 0  # op=4
  vadd.f16 ub[x0+192]{1,0}, ub[x0+0]{1,0}, ub[x0+96]{1,0}, count=48  # op=4
  vmuls.f16 ub[x0+288]{1,48}, ub[x0+192]{1,0}, 0.2, count=48  # op=4
  vadds.f16 ub[x0+288]{1,48}, ub[x0+288]{1,48}, 0.5, count=48  # op=4
  vmaxs.f16 ub[x0+288]{1,48}, ub[x0+288]{1,48}, 0, count=48  # op=4
  vmins.f16 ub[x0+384]{1,0}, ub[x0+288]{1,48}, 1, count=48  # op=4
  set_flag vector, mte3, 0  # op=4
  wait_flag vector, mte3, 0  # op=4
  dma.f16 gm[x0+97408], ub[x0+384], extent=[48], dst_stride=[1], src_stride=[1]  # op=4
  barrier  # op=4
  dma.f16 ub[x0+0], gm[x0+67072], extent=[13824], dst_stride=[1], src_stride=[1]  # op=5
  dma.f16 ub[x0+27648], gm[x0+97408], extent=[48], dst_stride=[1], src_stride=[1]  # op=5
  set_flag mte2, vector, 0  # op=5
  wait_flag mte2, vector, 0  # op=5
  vmul.f16 ub[x0+27744]{1,288}, ub[x0+0]{1,288}, ub[x0+27648]{0,1}, count=288, repeat=48  # op=5
  set_flag vector, mte3, 0  # op=5
  wait_flag vector, mte3, 0  # op=5
  dma.f16 gm[x0+97536], ub[x0+27744], extent=[13824], dst_stride=[1], src_stride=[1]  # op=5
  barrier  # op=5
  dma.f16 l1[x0+0], gm[x0+97536], extent=[13824], dst_stride=[1], src_stride=[1]  # op=6
  dma.f16 l1[x0+27648], gm[x0+125184], extent=[768], dst_stride=[1], src_stride=[1]  # op=6
  set_flag mte2, mte1, 0  # op=6
  wait_flag mte2, mte1, 0  # op=6
  load2d.f16 l0a[x0+0], l1[x0+27648], rows=16, cols=48, src_row_stride=48  # op=6
  img2col.f16 l0b[x0+0], l1[x0+0], c=48, h=3, w=96, kh=1, kw=1, oh=3, ow=96  # op=6
  set_flag mte1, cube, 0  # op=6
  wait_flag mte1, cube, 0  # op=6
  mmad l0c[x0+0], l0a[x0+0], l0b[x0+0], m1=2, k1=3, n1=18  # op=6
  set_flag cube, fix, 0  # op=6
  wait_flag cube, fix, 0  # op=6
  fix.f16 ub[x0+0], l0c[x0+0], m=16, n=288, dst_row_stride=288  # op=6
  set_flag fix, vector, 0  # op=6
  dma.f16 ub[x0+9216], gm[x0+126720], extent=[16], dst_stride=[1], src_stride=[1]  # op=6
  set_flag mte2, vector, 0  # op=6
  dma.f16 ub[x0+9248], gm[x0+27648], extent=[4608], dst_stride=[1], src_stride=[1]  # op=6
  set_flag mte2, vector, 1  # op=6
  wait_flag mte2, vector, 0  # op=6
  wait_flag fix, vector, 0  # op=6
  vadd.f16 ub[x0+18464]{1,288}, ub[x0+0]{1,288}, ub[x0+9216]{0,1}, count=288, repeat=16  # op=6
  wait_flag mte2, vector, 1  # op=6
  vadd.f16 ub[x0+27680]{1,0}, ub[x0+9248]{1,0}, ub[x0+18464]{1,0}, count=4608  # op=6
  set_flag vector, mte3, 0  # op=6
  wait_flag vector, mte3, 0  # op=6
  dma.f16 gm[x0+126784], ub[x0+27680], extent=[4608], dst_stride=[1], src_stride=[1]  # op=6
  barrier  # op=6

.program "Extracted from {Model from PaddlePaddle.}"
.gm_bytes 37632
.op 0 p2o.Add.114
.op 1 p2o.Mul.88
.buffer conv2d_458.tmp_0 kind=input addr=0x0 bytes=9216 dtype=f16 shape=[1,192,4,6]
.buffer p2o.Add.115 kind=scratch addr=0x2400 bytes=9216 dtype=f16 shape=[1,192,4,6]
.buffer conv2d_410.w_0.bn kind=constant addr=0x4800 bytes=9600 dtype=f16 shape=[192,1,5,5]
.buffer conv2d_410.w_0.bn_bias kind=constant addr=0x6d80 bytes=384 dtype=f16 shape=[192]
.buffer p2o.Mul.89 kind=output addr=0x6f00 bytes=9216 dtype=f16 shape=[1,192,4,6]

.core 0
  dma.f16 ub[x0+0], gm[x0+0], extent=[4608], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vmuls.f16 ub[x0+9216]{1,0}, ub[x0+0]{1,0}, 0.9530457, count=4608  # op=0
  vadds.f16 ub[x0+18432]{1,0}, ub[x0+9216]{1,0}, 0.10857653, count=4608  # op=0
  vmuls.f16 ub[x0+27648]{1,4608}, ub[x0+18432]{1,0}, 0.16666667, count=4608  # op=0
  vadds.f16 ub[x0+27648]{1,4608}, ub[x0+27648]{1,4608}, 0.5, count=4608  # op=0
  vmaxs.f16 ub[x0+27648]{1,4608}, ub[x0+27648]{1,4608}, 0, count=4608  # op=0
  vmins.f16 ub[x0+27648]{1,4608}, ub[x0+27648]{1,4608}, 1, count=4608  # op=0
  vmul.f16 ub[x0+36864]{1,0}, ub[x0+18432]{1,0}, ub[x0+27648]{1,4608}, count=4608  # op=0
  vmuls.f16 ub[x0+46080]{1,0}, ub[x0+36864]{1,0}, 0.9304854, count=4608  # op=0
  vadds.f16 ub[x0+55296]{1,0}, ub[x0+46080]{1,0}, 0.057224568, count=4608  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+9216], ub[x0+55296], extent=[4608], dst_stride=[1], src_stride=[1]  # op=0
  barrier  # op=0
  set_flag mte3, vector, 0  # op=1
  set_flag vector, mte2, 3  # op=1
  set_flag vector, mte2, 2  # op=1
  set_flag mte3, vector, 1  # op=1
  set_flag vector, mte2, 1  # op=1
  set_flag vector, mte2, 0  # op=1
  li x1, 0  # op=1
L23:
  wait_flag vector, mte2, 0  # op=1
  muli x2, x1, 3840  # op=1
  dma.f16 ub[x0+0], gm[x2+9188], extent=[40,8,10], dst_stride=[80,10,1], src_stride=[24,6,1], valid=[0:40,2:6,2:8]  # op=1
  muli x2, x1, 4000  # op=1
  dma.f16 ub[x0+6400], gm[x2+18432], extent=[1000], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, vector, 0  # op=1
  wait_flag vector, mte2, 1  # op=1
  muli x2, x1, 160  # op=1
  dma.f16 ub[x0+8416], gm[x2+28032], extent=[40], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, vector, 1  # op=1
  wait_flag mte2, vector, 0  # op=1
  vdup.f16 ub[x0+8512]{1,0}, 0, count=960  # op=1
  li x2, 0  # op=1
L36:
  li x3, 0  # op=1
L37:
  li x4, 0  # op=1
L38:
  muli x5, x2, 12  # op=1
  muli x6, x3, 20  # op=1
  muli x7, x4, 2  # op=1
  add x6, x6, x7  # op=1
  muli x7, x2, 20  # op=1
  add x6, x6, x7  # op=1
  muli x7, x3, 10  # op=1
  muli x8, x4, 2  # op=1
  add x7, x7, x8  # op=1
  vmla.f16 ub[x5+8512]{1,24}, ub[x6+0]{1,80}, ub[x7+6400]{0,25}, count=6, repeat=40  # op=1
  addi x4, x4, 1  # op=1
  blti x4, 5, L38  # op=1
  addi x3, x3, 1  # op=1
  blti x3, 5, L37  # op=1
  addi x2, x2, 1  # op=1
  blti x2, 4, L36  # op=1
  set_flag vector, mte2, 0  # op=1
  wait_flag mte2, vector, 1  # op=1
  vadd.f16 ub[x0+10432]{1,24}, ub[x0+8512]{1,24}, ub[x0+8416]{0,1}, count=24, repeat=40  # op=1
  set_flag vector, mte2, 1  # op=1
  vmuls.f16 ub[x0+12352]{1,960}, ub[x0+10432]{1,0}, 0.16666667, count=960  # op=1
  vadds.f16 ub[x0+12352]{1,960}, ub[x0+12352]{1,960}, 0.5, count=960  # op=1
  vmaxs.f16 ub[x0+12352]{1,960}, ub[x0+12352]{1,960}, 0, count=960  # op=1
  vmins.f16 ub[x0+12352]{1,960}, ub[x0+12352]{1,960}, 1, count=960  # op=1
  vmul.f16 ub[x0+14272]{1,0}, ub[x0+10432]{1,0}, ub[x0+12352]{1,960}, count=960  # op=1
  wait_flag mte3, vector, 1  # op=1
  vmuls.f16 ub[x0+16192]{1,0}, ub[x0+14272]{1,0}, 0.29670733, count=960  # op=1
  set_flag vector, mte3, 0  # op=1
  wait_flag vector, mte3, 0  # op=1
  muli x2, x1, 3840  # op=1
  dma.f16 gm[x2+28416], ub[x0+16192], extent=[960], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte3, vector, 1  # op=1
  wait_flag vector, mte2, 2  # op=1
  muli x2, x1, 3840  # op=1
  dma.f16 ub[x0+18112], gm[x2+11108], extent=[40,8,10], dst_stride=[80,10,1], src_stride=[24,6,1], valid=[0:40,2:6,2:8]  # op=1
  muli x2, x1, 4000  # op=1
  dma.f16 ub[x0+24512], gm[x2+20432], extent=[1000], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, vector, 0  # op=1
  wait_flag vector, mte2, 3  # op=1
  muli x2, x1, 160  # op=1
  dma.f16 ub[x0+26528], gm[x2+28112], extent=[40], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, vector, 1  # op=1
  wait_flag mte2, vector, 0  # op=1
  vdup.f16 ub[x0+26624]{1,0}, 0, count=960  # op=1
  li x2, 0  # op=1
L83:
  li x3, 0  # op=1
L84:
  li x4, 0  # op=1
L85:
  muli x5, x2, 12  # op=1
  muli x6, x3, 20  # op=1
  muli x7, x4, 2  # op=1
  add x6, x6, x7  # op=1
  muli x7, x2, 20  # op=1
  add x6, x6, x7  # op=1
  muli x7, x3, 10  # op=1
  muli x8, x4, 2  # op=1
  add x7, x7, x8  # op=1
  vmla.f16 ub[x5+26624]{1,24}, ub[x6+18112]{1,80}, ub[x7+24512]{0,25}, count=6, repeat=40  # op=1
  addi x4, x4, 1  # op=1
  blti x4, 5, L85  # op=1
  addi x3, x3, 1  # op=1
  blti x3, 5, L84  # op=1
  addi x2, x2, 1  # op=1
  blti x2, 4, L83  # op=1
  set_flag vector, mte2, 2  # op=1
  wait_flag mte2, vector, 1  # op=1
  vadd.f16 ub[x0+28544]{1,24}, ub[x0+26624]{1,24}, ub[x0+26528]{0,1}, count=24, repeat=40  # op=1
  set_flag vector, mte2, 3  # op=1
  vmuls.f16 ub[x0+30464]{1,960}, ub[x0+28544]{1,0}, 0.16666667, count=960  # op=1
  vadds.f16 ub[x0+30464]{1,960}, ub[x0+30464]{1,960}, 0.5, count=960  # op=1
  vmaxs.f16 ub[x0+30464]{1,960}, ub[x0+30464]{1,960}, 0, count=960  # op=1
  vmins.f16 ub[x0+30464]{1,960}, ub[x0+30464]{1,960}, 1, count=960  # op=1
  vmul.f16 ub[x0+32384]{1,0}, ub[x0+28544]{1,0}, ub[x0+30464]{1,960}, count=960  # op=1
  wait_flag mte3, vector, 0  # op=1
  vmuls.f16 ub[x0+34304]{1,0}, ub[x0+32384]{1,0}, 0.29670733, count=960  # op=1
  set_flag vector, mte3, 0  # op=1
  wait_flag vector, mte3, 0  # op=1
  muli x2, x1, 3840  # op=1
  dma.f16 gm[x2+30336], ub[x0+34304], extent=[960], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte3, vector, 0  # op=1
  addi x1, x1, 1  # op=1
  blti x1, 2, L23  # op=1
  wait_flag vector, mte2, 0  # op=1
  wait_flag vector, mte2, 1  # op=1
  wait_flag mte3, vector, 1  # op=1
  wait_flag vector, mte2, 2  # op=1
  wait_flag vector, mte2, 3  # op=1
  wait_flag mte3, vector, 0  # op=1
  set_flag vector, mte2, 4  # op=1
  set_flag mte3, vector, 2  # op=1
  wait_flag vector, mte2, 4  # op=1
  dma.f16 ub[x0+0], gm[x0+16868], extent=[32,8,10], dst_stride=[80,10,1], src_stride=[24,6,1], valid=[0:32,2:6,2:8]  # op=1
  dma.f16 ub[x0+6400], gm[x0+26432], extent=[800], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, vector, 0  # op=1
  dma.f16 ub[x0+8416], gm[x0+28352], extent=[32], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, vector, 1  # op=1
  wait_flag mte2, vector, 0  # op=1
  vdup.f16 ub[x0+8512]{1,0}, 0, count=768  # op=1
  li x1, 0  # op=1
L136:
  li x2, 0  # op=1
L137:
  li x3, 0  # op=1
L138:
  muli x4, x1, 12  # op=1
  muli x5, x2, 20  # op=1
  muli x6, x3, 2  # op=1
  add x5, x5, x6  # op=1
  muli x6, x1, 20  # op=1
  add x5, x5, x6  # op=1
  muli x6, x2, 10  # op=1
  muli x7, x3, 2  # op=1
  add x6, x6, x7  # op=1
  vmla.f16 ub[x4+8512]{1,24}, ub[x5+0]{1,80}, ub[x6+6400]{0,25}, count=6, repeat=32  # op=1
  addi x3, x3, 1  # op=1
  blti x3, 5, L138  # op=1
  addi x2, x2, 1  # op=1
  blti x2, 5, L137  # op=1
  addi x1, x1, 1  # op=1
  blti x1, 4, L136  # op=1
  wait_flag mte2, vector, 1  # op=1
  vadd.f16 ub[x0+10432]{1,24}, ub[x0+8512]{1,24}, ub[x0+8416]{0,1}, count=24, repeat=32  # op=1
  vmuls.f16 ub[x0+12352]{1,768}, ub[x0+10432]{1,0}, 0.16666667, count=768  # op=1
  vadds.f16 ub[x0+12352]{1,768}, ub[x0+12352]{1,768}, 0.5, count=768  # op=1
  vmaxs.f16 ub[x0+12352]{1,768}, ub[x0+12352]{1,768}, 0, count=768  # op=1
  vmins.f16 ub[x0+12352]{1,768}, ub[x0+12352]{1,768}, 1, count=768  # op=1
  vmul.f16 ub[x0+14272]{1,0}, ub[x0+10432]{1,0}, ub[x0+12352]{1,768}, count=768  # op=1
  wait_flag mte3, vector, 2  # op=1
  vmuls.f16 ub[x0+16192]{1,0}, ub[x0+14272]{1,0}, 0.29670733, count=768  # op=1
  set_flag vector, mte3, 0  # op=1
  wait_flag vector, mte3, 0  # op=1
  dma.f16 gm[x0+36096], ub[x0+16192], extent=[768], dst_stride=[1], src_stride=[1]  # op=1
  barrier  # op=1

.program "Extracted from {Model from PaddlePaddle.}"
.gm_bytes 1231360
.op 0 p2o.Add.78
.op 1 p2o.Add.86
.buffer p2o.Mul.55 kind=input addr=0x0 bytes=491520 dtype=f16 shape=[1,128,12,160]
.buffer p2o.Add.79 kind=scratch addr=0x78000 bytes=491520 dtype=f16 shape=[1,128,12,160]
.buffer conv2d_167.w_0.bn kind=constant addr=0xf0000 bytes=2304 dtype=f16 shape=[128,1,3,3]
.buffer conv2d_167.w_0.bn_bias kind=constant addr=0xf0900 bytes=256 dtype=f16 shape=[128]
.buffer p2o.Add.87 kind=output addr=0xf0a00 bytes=245760 dtype=f16 shape=[1,128,12,80]

.core 0
  set_flag mte3, vector, 1  # op=0
  set_flag vector, mte2, 1  # op=0
  set_flag mte3, vector, 0  # op=0
  set_flag vector, mte2, 0  # op=0
  li x1, 0  # op=0
L5:
  wait_flag vector, mte2, 0  # op=0
  muli x2, x1, 15360  # op=0
  dma.f16 ub[x0+0], gm[x2+0], extent=[3840], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vadds.f16 ub[x0+7680]{1,0}, ub[x0+0]{1,0}, -0.048656598, count=3840  # op=0
  set_flag vector, mte2, 0  # op=0
  vmuls.f16 ub[x0+15360]{1,3840}, ub[x0+7680]{1,0}, 0.16666667, count=3840  # op=0
  vadds.f16 ub[x0+15360]{1,3840}, ub[x0+15360]{1,3840}, 0.5, count=3840  # op=0
  vmaxs.f16 ub[x0+15360]{1,3840}, ub[x0+15360]{1,3840}, 0, count=3840  # op=0
  vmins.f16 ub[x0+15360]{1,3840}, ub[x0+15360]{1,3840}, 1, count=3840  # op=0
  vmul.f16 ub[x0+23040]{1,0}, ub[x0+7680]{1,0}, ub[x0+15360]{1,3840}, count=3840  # op=0
  vmuls.f16 ub[x0+30720]{1,0}, ub[x0+23040]{1,0}, 0.6528459, count=3840  # op=0
  wait_flag mte3, vector, 0  # op=0
  vadds.f16 ub[x0+38400]{1,0}, ub[x0+30720]{1,0}, 0.07379292, count=3840  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  muli x2, x1, 15360  # op=0
  dma.f16 gm[x2+491520], ub[x0+38400], extent=[3840], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte3, vector, 0  # op=0
  wait_flag vector, mte2, 1  # op=0
  muli x2, x1, 15360  # op=0
  dma.f16 ub[x0+46080], gm[x2+7680], extent=[3840], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vadds.f16 ub[x0+53760]{1,0}, ub[x0+46080]{1,0}, -0.048656598, count=3840  # op=0
  set_flag vector, mte2, 1  # op=0
  vmuls.f16 ub[x0+61440]{1,3840}, ub[x0+53760]{1,0}, 0.16666667, count=3840  # op=0
  vadds.f16 ub[x0+61440]{1,3840}, ub[x0+61440]{1,3840}, 0.5, count=3840  # op=0
  vmaxs.f16 ub[x0+61440]{1,3840}, ub[x0+61440]{1,3840}, 0, count=3840  # op=0
  vmins.f16 ub[x0+61440]{1,3840}, ub[x0+61440]{1,3840}, 1, count=3840  # op=0
  vmul.f16 ub[x0+69120]{1,0}, ub[x0+53760]{1,0}, ub[x0+61440]{1,3840}, count=3840  # op=0
  vmuls.f16 ub[x0+76800]{1,0}, ub[x0+69120]{1,0}, 0.6528459, count=3840  # op=0
  wait_flag mte3, vector, 1  # op=0
  vadds.f16 ub[x0+84480]{1,0}, ub[x0+76800]{1,0}, 0.07379292, count=3840  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  muli x2, x1, 15360  # op=0
  dma.f16 gm[x2+499200], ub[x0+84480], extent=[3840], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte3, vector, 1  # op=0
  addi x1, x1, 1  # op=0
  blti x1, 32, L5  # op=0
  wait_flag vector, mte2, 0  # op=0
  wait_flag mte3, vector, 0  # op=0
  wait_flag vector, mte2, 1  # op=0
  wait_flag mte3, vector, 1  # op=0
  barrier  # op=0
  set_flag mte3, vector, 1  # op=1
  set_flag vector, mte2, 3  # op=1
  set_flag vector, mte2, 2  # op=1
  set_flag mte3, vector, 0  # op=1
  set_flag vector, mte2, 1  # op=1
  set_flag vector, mte2, 0  # op=1
  li x1, 0  # op=1
L59:
  wait_flag vector, mte2, 0  # op=1
  muli x2, x1, 15360  # op=1
  dma.f16 ub[x0+0], gm[x2+491198], extent=[2,14,161], dst_stride=[2254,161,1], src_stride=[1920,160,1], valid=[0:2,1:13,1:161]  # op=1
  muli x2, x1, 72  # op=1
  dma.f16 ub[x0+9024], gm[x2+983040], extent=[18], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, vector, 0  # op=1
  wait_flag vector, mte2, 1  # op=1
  muli x2, x1, 8  # op=1
  dma.f16 ub[x0+9088], gm[x2+985344], extent=[2], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, vector, 1  # op=1
  wait_flag mte2, vector, 0  # op=1
  vdup.f16 ub[x0+9120]{1,0}, 0, count=1920  # op=1
  li x2, 0  # op=1
L72:
  li x3, 0  # op=1
L73:
  li x4, 0  # op=1
L74:
  muli x5, x2, 1920  # op=1
  muli x6, x3, 322  # op=1
  muli x7, x4, 2  # op=1
  add x6, x6, x7  # op=1
  muli x7, x2, 4508  # op=1
  add x6, x6, x7  # op=1
  muli x7, x3, 6  # op=1
  muli x8, x4, 2  # op=1
  add x7, x7, x8  # op=1
  muli x8, x2, 18  # op=1
  add x7, x7, x8  # op=1
  vmla.f16 ub[x5+9120]{1,80}, ub[x6+0]{2,161}, ub[x7+9024]{0,0}, count=80, repeat=12  # op=1
  addi x4, x4, 1  # op=1
  blti x4, 3, L74  # op=1
  addi x3, x3, 1  # op=1
  blti x3, 3, L73  # op=1
  addi x2, x2, 1  # op=1
  blti x2, 2, L72  # op=1
  set_flag vector, mte2, 0  # op=1
  wait_flag mte2, vector, 1  # op=1
  vadd.f16 ub[x0+12960]{1,960}, ub[x0+9120]{1,960}, ub[x0+9088]{0,1}, count=960, repeat=2  # op=1
  set_flag vector, mte2, 1  # op=1
  vmuls.f16 ub[x0+16800]{1,1920}, ub[x0+12960]{1,0}, 0.16666667, count=1920  # op=1
  vadds.f16 ub[x0+16800]{1,1920}, ub[x0+16800]{1,1920}, 0.5, count=1920  # op=1
  vmaxs.f16 ub[x0+16800]{1,1920}, ub[x0+16800]{1,1920}, 0, count=1920  # op=1
  vmins.f16 ub[x0+16800]{1,1920}, ub[x0+16800]{1,1920}, 1, count=1920  # op=1
  vmul.f16 ub[x0+20640]{1,0}, ub[x0+12960]{1,0}, ub[x0+16800]{1,1920}, count=1920  # op=1
  vmuls.f16 ub[x0+24480]{1,0}, ub[x0+20640]{1,0}, 0.023532987, count=1920  # op=1
  wait_flag mte3, vector, 0  # op=1
  vadds.f16 ub[x0+28320]{1,0}, ub[x0+24480]{1,0}, 5.4620195e-05, count=1920  # op=1
  set_flag vector, mte3, 0  # op=1
  wait_flag vector, mte3, 0  # op=1
  muli x2, x1, 7680  # op=1
  dma.f16 gm[x2+985600], ub[x0+28320], extent=[1920], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte3, vector, 0  # op=1
  wait_flag vector, mte2, 2  # op=1
  muli x2, x1, 15360  # op=1
  dma.f16 ub[x0+32160], gm[x2+498878], extent=[2,14,161], dst_stride=[2254,161,1], src_stride=[1920,160,1], valid=[0:2,1:13,1:161]  # op=1
  muli x2, x1, 72  # op=1
  dma.f16 ub[x0+41184], gm[x2+983076], extent=[18], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, vector, 0  # op=1
  wait_flag vector, mte2, 3  # op=1
  muli x2, x1, 8  # op=1
  dma.f16 ub[x0+41248], gm[x2+985348], extent=[2], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, vector, 1  # op=1
  wait_flag mte2, vector, 0  # op=1
  vdup.f16 ub[x0+41280]{1,0}, 0, count=1920  # op=1
  li x2, 0  # op=1
L122:
  li x3, 0  # op=1
L123:
  li x4, 0  # op=1
L124:
  muli x5, x2, 1920  # op=1
  muli x6, x3, 322  # op=1
  muli x7, x4, 2  # op=1
  add x6, x6, x7  # op=1
  muli x7, x2, 4508  # op=1
  add x6, x6, x7  # op=1
  muli x7, x3, 6  # op=1
  muli x8, x4, 2  # op=1
  add x7, x7, x8  # op=1
  muli x8, x2, 18  # op=1
  add x7, x7, x8  # op=1
  vmla.f16 ub[x5+41280]{1,80}, ub[x6+32160]{2,161}, ub[x7+41184]{0,0}, count=80, repeat=12  # op=1
  addi x4, x4, 1  # op=1
  blti x4, 3, L124  # op=1
  addi x3, x3, 1  # op=1
  blti x3, 3, L123  # op=1
  addi x2, x2, 1  # op=1
  blti x2, 2, L122  # op=1
  set_flag vector, mte2, 2  # op=1
  wait_flag mte2, vector, 1  # op=1
  vadd.f16 ub[x0+45120]{1,960}, ub[x0+41280]{1,960}, ub[x0+41248]{0,1}, count=960, repeat=2  # op=1
  set_flag vector, mte2, 3  # op=1
  vmuls.f16 ub[x0+48960]{1,1920}, ub[x0+45120]{1,0}, 0.16666667, count=1920  # op=1
  vadds.f16 ub[x0+48960]{1,1920}, ub[x0+48960]{1,1920}, 0.5, count=1920  # op=1
  vmaxs.f16 ub[x0+48960]{1,1920}, ub[x0+48960]{1,1920}, 0, count=1920  # op=1
  vmins.f16 ub[x0+48960]{1,1920}, ub[x0+48960]{1,1920}, 1, count=1920  # op=1
  vmul.f16 ub[x0+52800]{1,0}, ub[x0+45120]{1,0}, ub[x0+48960]{1,1920}, count=1920  # op=1
  vmuls.f16 ub[x0+56640]{1,0}, ub[x0+52800]{1,0}, 0.023532987, count=1920  # op=1
  wait_flag mte3, vector, 1  # op=1
  vadds.f16 ub[x0+60480]{1,0}, ub[x0+56640]{1,0}, 5.4620195e-05, count=1920  # op=1
  set_flag vector, mte3, 0  # op=1
  wait_flag vector, mte3, 0  # op=1
  muli x2, x1, 7680  # op=1
  dma.f16 gm[x2+989440], ub[x0+60480], extent=[1920], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte3, vector, 1  # op=1
  addi x1, x1, 1  # op=1
  blti x1, 32, L59  # op=1
  wait_flag vector, mte2, 0  # op=1
  wait_flag vector, mte2, 1  # op=1
  wait_flag mte3, vector, 0  # op=1
  wait_flag vector, mte2, 2  # op=1
  wait_flag vector, mte2, 3  # op=1
  wait_flag mte3, vector, 1  # op=1
  barrier  # op=1

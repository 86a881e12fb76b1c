.program "Extracted from {Model from PaddlePaddle.}"
.gm_bytes 987904
.op 0 p2o.Add.22
.op 1 p2o.Div.3
.buffer p2o.Add.15 kind=input addr=0x0 bytes=245760 dtype=f16 shape=[1,32,24,160]
.buffer conv2d_159.w_0.bn kind=constant addr=0x3c000 bytes=576 dtype=f16 shape=[32,1,3,3]
.buffer conv2d_159.w_0.bn_bias kind=constant addr=0x3c240 bytes=64 dtype=f16 shape=[32]
.buffer p2o.Add.23 kind=scratch addr=0x3c280 bytes=245760 dtype=f16 shape=[1,32,24,160]
.buffer conv2d_160.w_0.bn kind=constant addr=0x78280 bytes=4096 dtype=f16 shape=[64,32,1,1]
.buffer conv2d_160.w_0.bn_bias kind=constant addr=0x79280 bytes=128 dtype=f16 shape=[64]
.buffer hardswish_33.tmp_0 kind=output addr=0x79300 bytes=491520 dtype=f16 shape=[1,64,24,160]

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
  dma.f16 ub[x0+0], gm[x2-322], extent=[15,162], dst_stride=[162,1], src_stride=[160,1], valid=[1:15,1:161]  # op=0
  muli x2, x1, 36  # op=0
  dma.f16 ub[x0+4864], gm[x2+245760], extent=[9], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag vector, mte2, 0  # op=0
  muli x2, x1, 4  # op=0
  dma.f16 ub[x0+4896], gm[x2+246336], extent=[1], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 1  # op=0
  wait_flag mte2, vector, 0  # op=0
  vdup.f16 ub[x0+4928]{1,0}, 0, count=2080  # op=0
  li x2, 0  # op=0
L20:
  li x3, 0  # op=0
L21:
  muli x4, x2, 324  # op=0
  muli x5, x3, 2  # op=0
  add x4, x4, x5  # op=0
  muli x5, x2, 6  # op=0
  muli x6, x3, 2  # op=0
  add x5, x5, x6  # op=0
  vmla.f16 ub[x0+4928]{1,160}, ub[x4+0]{1,162}, ub[x5+4864]{0,0}, count=160, repeat=13  # op=0
  addi x3, x3, 1  # op=0
  blti x3, 3, L21  # op=0
  addi x2, x2, 1  # op=0
  blti x2, 3, L20  # op=0
  set_flag vector, mte2, 4  # op=0
  wait_flag mte2, vector, 1  # op=0
  vadd.f16 ub[x0+9088]{1,0}, ub[x0+4928]{1,0}, ub[x0+4896]{0,0}, count=2080  # op=0
  set_flag vector, mte2, 5  # op=0
  vmuls.f16 ub[x0+13248]{1,2080}, ub[x0+9088]{1,0}, 0.16666667, count=2080  # op=0
  vadds.f16 ub[x0+13248]{1,2080}, ub[x0+13248]{1,2080}, 0.5, count=2080  # op=0
  vmaxs.f16 ub[x0+13248]{1,2080}, ub[x0+13248]{1,2080}, 0, count=2080  # op=0
  vmins.f16 ub[x0+13248]{1,2080}, ub[x0+13248]{1,2080}, 1, count=2080  # op=0
  vmul.f16 ub[x0+17408]{1,0}, ub[x0+9088]{1,0}, ub[x0+13248]{1,2080}, count=2080  # op=0
  vmuls.f16 ub[x0+21568]{1,0}, ub[x0+17408]{1,0}, 0.060630765, count=2080  # op=0
  wait_flag mte3, vector, 1  # op=0
  vadds.f16 ub[x0+25728]{1,0}, ub[x0+21568]{1,0}, -4.0690597e-05, count=2080  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  muli x2, x1, 15360  # op=0
  dma.f16 gm[x2+246400], ub[x0+25728], extent=[2080], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte3, vector, 2  # op=0
  wait_flag vector, mte2, 4  # op=0
  muli x2, x1, 15360  # op=0
  dma.f16 ub[x0+0], gm[x2+3838], extent=[13,162], dst_stride=[162,1], src_stride=[160,1], valid=[0:12,1:161]  # op=0
  muli x2, x1, 36  # op=0
  dma.f16 ub[x0+4864], gm[x2+245760], extent=[9], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag vector, mte2, 5  # op=0
  muli x2, x1, 4  # op=0
  dma.f16 ub[x0+4896], gm[x2+246336], extent=[1], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 1  # op=0
  wait_flag mte2, vector, 0  # op=0
  vdup.f16 ub[x0+4928]{1,0}, 0, count=1760  # op=0
  li x2, 0  # op=0
L62:
  li x3, 0  # op=0
L63:
  muli x4, x2, 324  # op=0
  muli x5, x3, 2  # op=0
  add x4, x4, x5  # op=0
  muli x5, x2, 6  # op=0
  muli x6, x3, 2  # op=0
  add x5, x5, x6  # op=0
  vmla.f16 ub[x0+4928]{1,160}, ub[x4+0]{1,162}, ub[x5+4864]{0,0}, count=160, repeat=11  # op=0
  addi x3, x3, 1  # op=0
  blti x3, 3, L63  # op=0
  addi x2, x2, 1  # op=0
  blti x2, 3, L62  # op=0
  set_flag vector, mte2, 3  # op=0
  wait_flag mte2, vector, 1  # op=0
  vadd.f16 ub[x0+9088]{1,0}, ub[x0+4928]{1,0}, ub[x0+4896]{0,0}, count=1760  # op=0
  set_flag vector, mte2, 0  # op=0
  vmuls.f16 ub[x0+13248]{1,1760}, ub[x0+9088]{1,0}, 0.16666667, count=1760  # op=0
  vadds.f16 ub[x0+13248]{1,1760}, ub[x0+13248]{1,1760}, 0.5, count=1760  # op=0
  vmaxs.f16 ub[x0+13248]{1,1760}, ub[x0+13248]{1,1760}, 0, count=1760  # op=0
  vmins.f16 ub[x0+13248]{1,1760}, ub[x0+13248]{1,1760}, 1, count=1760  # op=0
  vmul.f16 ub[x0+17408]{1,0}, ub[x0+9088]{1,0}, ub[x0+13248]{1,1760}, count=1760  # op=0
  vmuls.f16 ub[x0+21568]{1,0}, ub[x0+17408]{1,0}, 0.060630765, count=1760  # op=0
  wait_flag mte3, vector, 2  # op=0
  vadds.f16 ub[x0+25728]{1,0}, ub[x0+21568]{1,0}, -4.0690597e-05, count=1760  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  muli x2, x1, 15360  # op=0
  dma.f16 gm[x2+250560], ub[x0+25728], extent=[1760], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte3, vector, 1  # op=0
  wait_flag vector, mte2, 2  # op=0
  muli x2, x1, 15360  # op=0
  dma.f16 ub[x0+29888], gm[x2+7358], extent=[15,162], dst_stride=[162,1], src_stride=[160,1], valid=[1:15,1:161]  # op=0
  muli x2, x1, 36  # op=0
  dma.f16 ub[x0+34752], gm[x2+245778], extent=[9], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag vector, mte2, 1  # op=0
  muli x2, x1, 4  # op=0
  dma.f16 ub[x0+34784], gm[x2+246338], extent=[1], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 1  # op=0
  wait_flag mte2, vector, 0  # op=0
  vdup.f16 ub[x0+34816]{1,0}, 0, count=2080  # op=0
  li x2, 0  # op=0
L104:
  li x3, 0  # op=0
L105:
  muli x4, x2, 324  # op=0
  muli x5, x3, 2  # op=0
  add x4, x4, x5  # op=0
  muli x5, x2, 6  # op=0
  muli x6, x3, 2  # op=0
  add x5, x5, x6  # op=0
  vmla.f16 ub[x0+34816]{1,160}, ub[x4+29888]{1,162}, ub[x5+34752]{0,0}, count=160, repeat=13  # op=0
  addi x3, x3, 1  # op=0
  blti x3, 3, L105  # op=0
  addi x2, x2, 1  # op=0
  blti x2, 3, L104  # op=0
  set_flag vector, mte2, 4  # op=0
  wait_flag mte2, vector, 1  # op=0
  vadd.f16 ub[x0+38976]{1,0}, ub[x0+34816]{1,0}, ub[x0+34784]{0,0}, count=2080  # op=0
  set_flag vector, mte2, 5  # op=0
  vmuls.f16 ub[x0+43136]{1,2080}, ub[x0+38976]{1,0}, 0.16666667, count=2080  # op=0
  vadds.f16 ub[x0+43136]{1,2080}, ub[x0+43136]{1,2080}, 0.5, count=2080  # op=0
  vmaxs.f16 ub[x0+43136]{1,2080}, ub[x0+43136]{1,2080}, 0, count=2080  # op=0
  vmins.f16 ub[x0+43136]{1,2080}, ub[x0+43136]{1,2080}, 1, count=2080  # op=0
  vmul.f16 ub[x0+47296]{1,0}, ub[x0+38976]{1,0}, ub[x0+43136]{1,2080}, count=2080  # op=0
  vmuls.f16 ub[x0+51456]{1,0}, ub[x0+47296]{1,0}, 0.060630765, count=2080  # op=0
  wait_flag mte3, vector, 0  # op=0
  vadds.f16 ub[x0+55616]{1,0}, ub[x0+51456]{1,0}, -4.0690597e-05, count=2080  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  muli x2, x1, 15360  # op=0
  dma.f16 gm[x2+254080], ub[x0+55616], extent=[2080], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte3, vector, 2  # op=0
  wait_flag vector, mte2, 4  # op=0
  muli x2, x1, 15360  # op=0
  dma.f16 ub[x0+29888], gm[x2+11518], extent=[13,162], dst_stride=[162,1], src_stride=[160,1], valid=[0:12,1:161]  # op=0
  muli x2, x1, 36  # op=0
  dma.f16 ub[x0+34752], gm[x2+245778], extent=[9], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag vector, mte2, 5  # op=0
  muli x2, x1, 4  # op=0
  dma.f16 ub[x0+34784], gm[x2+246338], extent=[1], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 1  # op=0
  wait_flag mte2, vector, 0  # op=0
  vdup.f16 ub[x0+34816]{1,0}, 0, count=1760  # op=0
  li x2, 0  # op=0
L146:
  li x3, 0  # op=0
L147:
  muli x4, x2, 324  # op=0
  muli x5, x3, 2  # op=0
  add x4, x4, x5  # op=0
  muli x5, x2, 6  # op=0
  muli x6, x3, 2  # op=0
  add x5, x5, x6  # op=0
  vmla.f16 ub[x0+34816]{1,160}, ub[x4+29888]{1,162}, ub[x5+34752]{0,0}, count=160, repeat=11  # op=0
  addi x3, x3, 1  # op=0
  blti x3, 3, L147  # op=0
  addi x2, x2, 1  # op=0
  blti x2, 3, L146  # op=0
  set_flag vector, mte2, 2  # op=0
  wait_flag mte2, vector, 1  # op=0
  vadd.f16 ub[x0+38976]{1,0}, ub[x0+34816]{1,0}, ub[x0+34784]{0,0}, count=1760  # op=0
  set_flag vector, mte2, 1  # op=0
  vmuls.f16 ub[x0+43136]{1,1760}, ub[x0+38976]{1,0}, 0.16666667, count=1760  # op=0
  vadds.f16 ub[x0+43136]{1,1760}, ub[x0+43136]{1,1760}, 0.5, count=1760  # op=0
  vmaxs.f16 ub[x0+43136]{1,1760}, ub[x0+43136]{1,1760}, 0, count=1760  # op=0
  vmins.f16 ub[x0+43136]{1,1760}, ub[x0+43136]{1,1760}, 1, count=1760  # op=0
  vmul.f16 ub[x0+47296]{1,0}, ub[x0+38976]{1,0}, ub[x0+43136]{1,1760}, count=1760  # op=0
  vmuls.f16 ub[x0+51456]{1,0}, ub[x0+47296]{1,0}, 0.060630765, count=1760  # op=0
  wait_flag mte3, vector, 2  # op=0
  vadds.f16 ub[x0+55616]{1,0}, ub[x0+51456]{1,0}, -4.0690597e-05, count=1760  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  muli x2, x1, 15360  # op=0
  dma.f16 gm[x2+258240], ub[x0+55616], extent=[1760], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte3, vector, 0  # op=0
  addi x1, x1, 1  # op=0
  blti x1, 16, L7  # op=0
  wait_flag vector, mte2, 3  # op=0
  wait_flag vector, mte2, 0  # op=0
  wait_flag mte3, vector, 1  # op=0
  wait_flag vector, mte2, 2  # op=0
  wait_flag vector, mte2, 1  # op=0
  wait_flag mte3, vector, 0  # op=0
  barrier  # op=0
  dma.f16 l1[x0+0], gm[x0+492160], extent=[2048], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, mte1, 0  # op=1
  wait_flag mte2, mte1, 0  # op=1
  li x1, 0  # op=1
L188:
  set_flag mte3, vector, 0  # op=1
  set_flag vector, mte2, 0  # op=1
  set_flag vector, fix, 0  # op=1
  set_flag fix, cube, 0  # op=1
  set_flag mte1, mte2, 0  # op=1
  set_flag mte3, vector, 1  # op=1
  set_flag vector, mte2, 1  # op=1
  set_flag vector, fix, 1  # op=1
  set_flag fix, cube, 1  # op=1
  set_flag cube, mte1, 0  # op=1
  set_flag mte1, mte2, 1  # op=1
  li x2, 0  # op=1
L200:
  wait_flag mte1, mte2, 1  # op=1
  muli x3, x1, 1920  # op=1
  muli x4, x2, 80  # op=1
  add x3, x3, x4  # op=1
  dma.f16 l1[x0+4096], gm[x3+246400], extent=[32,6,20], dst_stride=[120,20,1], src_stride=[3840,160,1]  # op=1
  set_flag mte2, mte1, 1  # op=1
  wait_flag cube, mte1, 0  # op=1
  load2d.f16 l0a[x0+0], l1[x0+0], rows=64, cols=32, src_row_stride=32  # op=1
  wait_flag mte2, mte1, 1  # op=1
  img2col.f16 l0b[x0+0], l1[x0+4096], c=32, h=6, w=20, kh=1, kw=1, oh=6, ow=20  # op=1
  set_flag mte1, mte2, 1  # op=1
  set_flag mte1, cube, 0  # op=1
  wait_flag fix, cube, 1  # op=1
  wait_flag mte1, cube, 0  # op=1
  mmad l0c[x0+0], l0a[x0+0], l0b[x0+0], m1=8, k1=2, n1=8  # op=1
  set_flag cube, fix, 0  # op=1
  set_flag cube, mte1, 1  # op=1
  wait_flag vector, fix, 1  # op=1
  wait_flag cube, fix, 0  # op=1
  fix.f16 ub[x0+0], l0c[x0+0], m=64, n=120, dst_row_stride=120  # op=1
  set_flag fix, cube, 1  # op=1
  set_flag fix, vector, 0  # op=1
  wait_flag vector, mte2, 1  # op=1
  dma.f16 ub[x0+15360], gm[x0+496256], extent=[64], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, vector, 0  # op=1
  wait_flag mte2, vector, 0  # op=1
  wait_flag fix, vector, 0  # op=1
  vadd.f16 ub[x0+15488]{1,120}, ub[x0+0]{1,120}, ub[x0+15360]{0,1}, count=120, repeat=64  # op=1
  set_flag vector, fix, 1  # op=1
  set_flag vector, mte2, 1  # op=1
  wait_flag mte3, vector, 1  # op=1
  vmuls.f16 ub[x0+30848]{1,7680}, ub[x0+15488]{1,0}, 0.16666667, count=7680  # op=1
  vadds.f16 ub[x0+30848]{1,7680}, ub[x0+30848]{1,7680}, 0.5, count=7680  # op=1
  vmaxs.f16 ub[x0+30848]{1,7680}, ub[x0+30848]{1,7680}, 0, count=7680  # op=1
  vmins.f16 ub[x0+30848]{1,7680}, ub[x0+30848]{1,7680}, 1, count=7680  # op=1
  vmul.f16 ub[x0+46208]{1,0}, ub[x0+15488]{1,0}, ub[x0+30848]{1,7680}, count=7680  # op=1
  set_flag vector, mte3, 0  # op=1
  wait_flag vector, mte3, 0  # op=1
  muli x3, x1, 1920  # op=1
  muli x4, x2, 80  # op=1
  add x3, x3, x4  # op=1
  dma.f16 gm[x3+496384], ub[x0+46208], extent=[64,6,20], dst_stride=[3840,160,1], src_stride=[120,20,1]  # op=1
  set_flag mte3, vector, 1  # op=1
  wait_flag mte1, mte2, 0  # op=1
  muli x3, x1, 1920  # op=1
  muli x4, x2, 80  # op=1
  add x3, x3, x4  # op=1
  dma.f16 l1[x0+11776], gm[x3+246440], extent=[32,6,20], dst_stride=[120,20,1], src_stride=[3840,160,1]  # op=1
  set_flag mte2, mte1, 0  # op=1
  wait_flag cube, mte1, 1  # op=1
  load2d.f16 l0a[x0+0], l1[x0+0], rows=64, cols=32, src_row_stride=32  # op=1
  wait_flag mte2, mte1, 0  # op=1
  img2col.f16 l0b[x0+0], l1[x0+11776], c=32, h=6, w=20, kh=1, kw=1, oh=6, ow=20  # op=1
  set_flag mte1, mte2, 0  # op=1
  set_flag mte1, cube, 0  # op=1
  wait_flag fix, cube, 0  # op=1
  wait_flag mte1, cube, 0  # op=1
  mmad l0c[x0+32768], l0a[x0+0], l0b[x0+0], m1=8, k1=2, n1=8  # op=1
  set_flag cube, mte1, 0  # op=1
  set_flag cube, fix, 0  # op=1
  wait_flag vector, fix, 0  # op=1
  wait_flag cube, fix, 0  # op=1
  fix.f16 ub[x0+61568], l0c[x0+32768], m=64, n=120, dst_row_stride=120  # op=1
  set_flag fix, cube, 0  # op=1
  set_flag fix, vector, 0  # op=1
  wait_flag vector, mte2, 0  # op=1
  dma.f16 ub[x0+76928], gm[x0+496256], extent=[64], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, vector, 0  # op=1
  wait_flag mte2, vector, 0  # op=1
  wait_flag fix, vector, 0  # op=1
  vadd.f16 ub[x0+77056]{1,120}, ub[x0+61568]{1,120}, ub[x0+76928]{0,1}, count=120, repeat=64  # op=1
  set_flag vector, fix, 0  # op=1
  set_flag vector, mte2, 0  # op=1
  wait_flag mte3, vector, 0  # op=1
  vmuls.f16 ub[x0+92416]{1,7680}, ub[x0+77056]{1,0}, 0.16666667, count=7680  # op=1
  vadds.f16 ub[x0+92416]{1,7680}, ub[x0+92416]{1,7680}, 0.5, count=7680  # op=1
  vmaxs.f16 ub[x0+92416]{1,7680}, ub[x0+92416]{1,7680}, 0, count=7680  # op=1
  vmins.f16 ub[x0+92416]{1,7680}, ub[x0+92416]{1,7680}, 1, count=7680  # op=1
  vmul.f16 ub[x0+107776]{1,0}, ub[x0+77056]{1,0}, ub[x0+92416]{1,7680}, count=7680  # op=1
  set_flag vector, mte3, 0  # op=1
  wait_flag vector, mte3, 0  # op=1
  muli x3, x1, 1920  # op=1
  muli x4, x2, 80  # op=1
  add x3, x3, x4  # op=1
  dma.f16 gm[x3+496424], ub[x0+107776], extent=[64,6,20], dst_stride=[3840,160,1], src_stride=[120,20,1]  # op=1
  set_flag mte3, vector, 0  # op=1
  addi x2, x2, 1  # op=1
  blti x2, 4, L200  # op=1
  wait_flag mte1, mte2, 1  # op=1
  wait_flag cube, mte1, 0  # op=1
  wait_flag fix, cube, 1  # op=1
  wait_flag vector, fix, 1  # op=1
  wait_flag vector, mte2, 1  # op=1
  wait_flag mte3, vector, 1  # op=1
  wait_flag mte1, mte2, 0  # op=1
  wait_flag fix, cube, 0  # op=1
  wait_flag vector, fix, 0  # op=1
  wait_flag vector, mte2, 0  # op=1
  wait_flag mte3, vector, 0  # op=1
  addi x1, x1, 1  # op=1
  blti x1, 4, L188  # op=1
  barrier  # op=1

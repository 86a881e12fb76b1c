.program test
.gm_bytes 1728
.op 0 ConvTranspose_0_Conv
.op 1 ConvTranspose_0_Conv_1
.op 2 ConvTranspose_0_Conv_2
.op 3 ConvTranspose_0_Conv_3
.op 4 ConvTranspose_0_Concat
.op 5 ConvTranspose_0_Concat_1
.op 6 ConvTranspose_0_Concat_2
.buffer x kind=input addr=0x0 bytes=72 dtype=f16 shape=[1,4,3,3]
.buffer ConvTranspose_0_Conv kind=scratch addr=0x80 bytes=72 dtype=f16 shape=[1,4,3,3]
.buffer ConvTranspose_0_c kind=constant addr=0x100 bytes=32 dtype=f16 shape=[4,4,1,1]
.buffer b kind=constant addr=0x140 bytes=8 dtype=f16 shape=[4]
.buffer ConvTranspose_0_Conv_1 kind=scratch addr=0x180 bytes=72 dtype=f16 shape=[1,4,3,3]
.buffer ConvTranspose_0_c_1 kind=constant addr=0x200 bytes=64 dtype=f16 shape=[4,4,1,2]
.buffer ConvTranspose_0_Conv_2 kind=scratch addr=0x240 bytes=72 dtype=f16 shape=[1,4,3,3]
.buffer ConvTranspose_0_c_2 kind=constant addr=0x2c0 bytes=64 dtype=f16 shape=[4,4,2,1]
.buffer ConvTranspose_0_Conv_3 kind=scratch addr=0x300 bytes=72 dtype=f16 shape=[1,4,3,3]
.buffer ConvTranspose_0_c_3 kind=constant addr=0x380 bytes=128 dtype=f16 shape=[4,4,2,2]
.buffer ConvTranspose_0_Concat kind=scratch addr=0x400 bytes=144 dtype=f16 shape=[1,4,3,3,2]
.buffer ConvTranspose_0_Concat_1 kind=scratch addr=0x4c0 bytes=144 dtype=f16 shape=[1,4,3,3,2]
.buffer ConvTranspose_0_Concat_2 kind=output addr=0x580 bytes=288 dtype=f16 shape=[1,4,3,2,6]

.core 0
  dma.f16 l1[x0+0], gm[x0+0], extent=[36], dst_stride=[1], src_stride=[1]  # op=0
  dma.f16 l1[x0+96], gm[x0+256], extent=[16], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, mte1, 0  # op=0
  wait_flag mte2, mte1, 0  # op=0
  load2d.f16 l0a[x0+0], l1[x0+96], rows=4, cols=4, src_row_stride=4  # op=0
  img2col.f16 l0b[x0+0], l1[x0+0], c=4, h=3, w=3, kh=1, kw=1, oh=3, ow=3  # op=0
  set_flag mte1, cube, 0  # op=0
  wait_flag mte1, cube, 0  # op=0
  mmad l0c[x0+0], l0a[x0+0], l0b[x0+0], m1=1, k1=1, n1=1  # op=0
  set_flag cube, fix, 0  # op=0
  wait_flag cube, fix, 0  # op=0
  fix.f16 ub[x0+0], l0c[x0+0], m=4, n=9, dst_row_stride=9  # op=0
  set_flag fix, vector, 0  # op=0
  dma.f16 ub[x0+96], gm[x0+320], extent=[4], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  wait_flag fix, vector, 0  # op=0
  vadd.f16 ub[x0+128]{1,9}, ub[x0+0]{1,9}, ub[x0+96]{0,1}, count=9, repeat=4  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+128], ub[x0+128], extent=[36], dst_stride=[1], src_stride=[1]  # op=0
  barrier  # op=0
  dma.f16 l1[x0+0], gm[x0+0], extent=[12,4], dst_stride=[4,1], src_stride=[3,1], valid=[0:12,0:3]  # op=1
  dma.f16 l1[x0+96], gm[x0+512], extent=[32], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, mte1, 0  # op=1
  wait_flag mte2, mte1, 0  # op=1
  load2d.f16 l0a[x0+0], l1[x0+96], rows=4, cols=8, src_row_stride=8  # op=1
  img2col.f16 l0b[x0+0], l1[x0+0], c=4, h=3, w=4, kh=1, kw=2, oh=3, ow=3  # op=1
  set_flag mte1, cube, 0  # op=1
  wait_flag mte1, cube, 0  # op=1
  mmad l0c[x0+0], l0a[x0+0], l0b[x0+0], m1=1, k1=1, n1=1  # op=1
  set_flag cube, fix, 0  # op=1
  wait_flag cube, fix, 0  # op=1
  fix.f16 ub[x0+0], l0c[x0+0], m=4, n=9, dst_row_stride=9  # op=1
  set_flag fix, vector, 0  # op=1
  dma.f16 ub[x0+96], gm[x0+320], extent=[4], dst_stride=[1], src_stride=[1]  # op=1
  set_flag mte2, vector, 0  # op=1
  wait_flag mte2, vector, 0  # op=1
  wait_flag fix, vector, 0  # op=1
  vadd.f16 ub[x0+128]{1,9}, ub[x0+0]{1,9}, ub[x0+96]{0,1}, count=9, repeat=4  # op=1
  set_flag vector, mte3, 0  # op=1
  wait_flag vector, mte3, 0  # op=1
  dma.f16 gm[x0+384], ub[x0+128], extent=[36], dst_stride=[1], src_stride=[1]  # op=1
  barrier  # op=1
  dma.f16 l1[x0+0], gm[x0+0], extent=[4,4,3], dst_stride=[12,3,1], src_stride=[9,3,1], valid=[0:4,0:3,0:3]  # op=2
  dma.f16 l1[x0+96], gm[x0+704], extent=[32], dst_stride=[1], src_stride=[1]  # op=2
  set_flag mte2, mte1, 0  # op=2
  wait_flag mte2, mte1, 0  # op=2
  load2d.f16 l0a[x0+0], l1[x0+96], rows=4, cols=8, src_row_stride=8  # op=2
  img2col.f16 l0b[x0+0], l1[x0+0], c=4, h=4, w=3, kh=2, kw=1, oh=3, ow=3  # op=2
  set_flag mte1, cube, 0  # op=2
  wait_flag mte1, cube, 0  # op=2
  mmad l0c[x0+0], l0a[x0+0], l0b[x0+0], m1=1, k1=1, n1=1  # op=2
  set_flag cube, fix, 0  # op=2
  wait_flag cube, fix, 0  # op=2
  fix.f16 ub[x0+0], l0c[x0+0], m=4, n=9, dst_row_stride=9  # op=2
  set_flag fix, vector, 0  # op=2
  dma.f16 ub[x0+96], gm[x0+320], extent=[4], dst_stride=[1], src_stride=[1]  # op=2
  set_flag mte2, vector, 0  # op=2
  wait_flag mte2, vector, 0  # op=2
  wait_flag fix, vector, 0  # op=2
  vadd.f16 ub[x0+128]{1,9}, ub[x0+0]{1,9}, ub[x0+96]{0,1}, count=9, repeat=4  # op=2
  set_flag vector, mte3, 0  # op=2
  wait_flag vector, mte3, 0  # op=2
  dma.f16 gm[x0+576], ub[x0+128], extent=[36], dst_stride=[1], src_stride=[1]  # op=2
  barrier  # op=2
  dma.f16 l1[x0+0], gm[x0+0], extent=[4,4,4], dst_stride=[16,4,1], src_stride=[9,3,1], valid=[0:4,0:3,0:3]  # op=3
  dma.f16 l1[x0+128], gm[x0+896], extent=[64], dst_stride=[1], src_stride=[1]  # op=3
  set_flag mte2, mte1, 0  # op=3
  wait_flag mte2, mte1, 0  # op=3
  load2d.f16 l0a[x0+0], l1[x0+128], rows=4, cols=16, src_row_stride=16  # op=3
  img2col.f16 l0b[x0+0], l1[x0+0], c=4, h=4, w=4, kh=2, kw=2, oh=3, ow=3  # op=3
  set_flag mte1, cube, 0  # op=3
  wait_flag mte1, cube, 0  # op=3
  mmad l0c[x0+0], l0a[x0+0], l0b[x0+0], m1=1, k1=1, n1=1  # op=3
  set_flag cube, fix, 0  # op=3
  wait_flag cube, fix, 0  # op=3
  fix.f16 ub[x0+0], l0c[x0+0], m=4, n=9, dst_row_stride=9  # op=3
  set_flag fix, vector, 0  # op=3
  dma.f16 ub[x0+96], gm[x0+320], extent=[4], dst_stride=[1], src_stride=[1]  # op=3
  set_flag mte2, vector, 0  # op=3
  wait_flag mte2, vector, 0  # op=3
  wait_flag fix, vector, 0  # op=3
  vadd.f16 ub[x0+128]{1,9}, ub[x0+0]{1,9}, ub[x0+96]{0,1}, count=9, repeat=4  # op=3
  set_flag vector, mte3, 0  # op=3
  wait_flag vector, mte3, 0  # op=3
  dma.f16 gm[x0+768], ub[x0+128], extent=[36], dst_stride=[1], src_stride=[1]  # op=3
  barrier  # op=3
  dma.f16 ub[x0+0], gm[x0+128], extent=[36], dst_stride=[1], src_stride=[1]  # op=4
  set_flag mte2, vector, 0  # op=4
  wait_flag mte2, vector, 0  # op=4
  vcopy.f16 ub[x0+96]{1,0}, ub[x0+0]{1,0}, count=36  # op=4
  set_flag vector, mte3, 0  # op=4
  wait_flag vector, mte3, 0  # op=4
  dma.f16 gm[x0+1024], ub[x0+96], extent=[36], dst_stride=[2], src_stride=[1]  # op=4
  barrier  # op=4
  dma.f16 ub[x0+0], gm[x0+384], extent=[36], dst_stride=[1], src_stride=[1]  # op=4
  set_flag mte2, vector, 0  # op=4
  wait_flag mte2, vector, 0  # op=4
  vcopy.f16 ub[x0+96]{1,0}, ub[x0+0]{1,0}, count=36  # op=4
  set_flag vector, mte3, 0  # op=4
  wait_flag vector, mte3, 0  # op=4
  dma.f16 gm[x0+1026], ub[x0+96], extent=[36], dst_stride=[2], src_stride=[1]  # op=4
  barrier  # op=4
  dma.f16 ub[x0+0], gm[x0+576], extent=[36], dst_stride=[1], src_stride=[1]  # op=5
  set_flag mte2, vector, 0  # op=5
  wait_flag mte2, vector, 0  # op=5
  vcopy.f16 ub[x0+96]{1,0}, ub[x0+0]{1,0}, count=36  # op=5
  set_flag vector, mte3, 0  # op=5
  wait_flag vector, mte3, 0  # op=5
  dma.f16 gm[x0+1216], ub[x0+96], extent=[36], dst_stride=[2], src_stride=[1]  # op=5
  barrier  # op=5
  dma.f16 ub[x0+0], gm[x0+768], extent=[36], dst_stride=[1], src_stride=[1]  # op=5
  set_flag mte2, vector, 0  # op=5
  wait_flag mte2, vector, 0  # op=5
  vcopy.f16 ub[x0+96]{1,0}, ub[x0+0]{1,0}, count=36  # op=5
  set_flag vector, mte3, 0  # op=5
  wait_flag vector, mte3, 0  # op=5
  dma.f16 gm[x0+1218], ub[x0+96], extent=[36], dst_stride=[2], src_stride=[1]  # op=5
  barrier  # op=5
  dma.f16 ub[x0+0], gm[x0+1024], extent=[72], dst_stride=[1], src_stride=[1]  # op=6
  set_flag mte2, vector, 0  # op=6
  wait_flag mte2, vector, 0  # op=6
  vcopy.f16 ub[x0+160]{1,0}, ub[x0+0]{1,0}, count=72  # op=6
  set_flag vector, mte3, 0  # op=6
  wait_flag vector, mte3, 0  # op=6
  dma.f16 gm[x0+1408], ub[x0+160], extent=[12,6], dst_stride=[12,1], src_stride=[6,1]  # op=6
  barrier  # op=6
  dma.f16 ub[x0+0], gm[x0+1216], extent=[72], dst_stride=[1], src_stride=[1]  # op=6
  set_flag mte2, vector, 0  # op=6
  wait_flag mte2, vector, 0  # op=6
  vcopy.f16 ub[x0+160]{1,0}, ub[x0+0]{1,0}, count=72  # op=6
  set_flag vector, mte3, 0  # op=6
  wait_flag vector, mte3, 0  # op=6
  dma.f16 gm[x0+1420], ub[x0+160], extent=[12,6], dst_stride=[12,1], src_stride=[6,1]  # op=6
  barrier  # op=6

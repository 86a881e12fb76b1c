.program test
.gm_bytes 384
.op 0 Pad_0
.buffer x kind=input addr=0x0 bytes=96 dtype=f32 shape=[1,2,3,4]
.buffer Pad_out kind=output addr=0x80 bytes=200 dtype=f32 shape=[1,2,5,5]

.core 0
  dma.f32 ub[x0+0], gm[x0+24], extent=[2], dst_stride=[1], src_stride=[12]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vcopy.f32 ub[x0+32]{1,0}, ub[x0+0]{1,0}, count=2  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f32 gm[x0+128], ub[x0+32], extent=[2], dst_stride=[25], src_stride=[1]  # op=0
  barrier  # op=0
  dma.f32 ub[x0+0], gm[x0+20], extent=[2], dst_stride=[1], src_stride=[12]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vcopy.f32 ub[x0+32]{1,0}, ub[x0+0]{1,0}, count=2  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f32 gm[x0+132], ub[x0+32], extent=[2], dst_stride=[25], src_stride=[1]  # op=0
  barrier  # op=0
  dma.f32 ub[x0+0], gm[x0+16], extent=[2,3], dst_stride=[3,1], src_stride=[12,1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vcopy.f32 ub[x0+32]{1,0}, ub[x0+0]{1,0}, count=6  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f32 gm[x0+136], ub[x0+32], extent=[2,3], dst_stride=[25,1], src_stride=[3,1]  # op=0
  barrier  # op=0
  dma.f32 ub[x0+0], gm[x0+8], extent=[6], dst_stride=[1], src_stride=[4]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vcopy.f32 ub[x0+32]{1,0}, ub[x0+0]{1,0}, count=6  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f32 gm[x0+148], ub[x0+32], extent=[2,3], dst_stride=[25,5], src_stride=[3,1]  # op=0
  barrier  # op=0
  dma.f32 ub[x0+0], gm[x0+4], extent=[6], dst_stride=[1], src_stride=[4]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vcopy.f32 ub[x0+32]{1,0}, ub[x0+0]{1,0}, count=6  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f32 gm[x0+152], ub[x0+32], extent=[2,3], dst_stride=[25,5], src_stride=[3,1]  # op=0
  barrier  # op=0
  dma.f32 ub[x0+0], gm[x0+0], extent=[6,3], dst_stride=[3,1], src_stride=[4,1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vcopy.f32 ub[x0+96]{1,0}, ub[x0+0]{1,0}, count=18  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f32 gm[x0+156], ub[x0+96], extent=[2,3,3], dst_stride=[25,5,1], src_stride=[9,3,1]  # op=0
  barrier  # op=0
  dma.f32 ub[x0+0], gm[x0+24], extent=[2], dst_stride=[1], src_stride=[12]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vcopy.f32 ub[x0+32]{1,0}, ub[x0+0]{1,0}, count=2  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f32 gm[x0+208], ub[x0+32], extent=[2], dst_stride=[25], src_stride=[1]  # op=0
  barrier  # op=0
  dma.f32 ub[x0+0], gm[x0+20], extent=[2], dst_stride=[1], src_stride=[12]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vcopy.f32 ub[x0+32]{1,0}, ub[x0+0]{1,0}, count=2  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f32 gm[x0+212], ub[x0+32], extent=[2], dst_stride=[25], src_stride=[1]  # op=0
  barrier  # op=0
  dma.f32 ub[x0+0], gm[x0+16], extent=[2,3], dst_stride=[3,1], src_stride=[12,1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vcopy.f32 ub[x0+32]{1,0}, ub[x0+0]{1,0}, count=6  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f32 gm[x0+216], ub[x0+32], extent=[2,3], dst_stride=[25,1], src_stride=[3,1]  # op=0
  barrier  # op=0

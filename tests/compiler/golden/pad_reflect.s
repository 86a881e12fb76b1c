.program test
.gm_bytes 192
.op 0 Pad_0
.buffer x kind=input addr=0x0 bytes=48 dtype=f16 shape=[1,2,3,4]
.buffer Pad_out kind=output addr=0x40 bytes=100 dtype=f16 shape=[1,2,5,5]

.core 0
  dma.f16 ub[x0+0], gm[x0+12], extent=[2], dst_stride=[1], src_stride=[12]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vcopy.f16 ub[x0+32]{1,0}, ub[x0+0]{1,0}, count=2  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+64], ub[x0+32], extent=[2], dst_stride=[25], src_stride=[1]  # op=0
  barrier  # op=0
  dma.f16 ub[x0+0], gm[x0+10], extent=[2], dst_stride=[1], src_stride=[12]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vcopy.f16 ub[x0+32]{1,0}, ub[x0+0]{1,0}, count=2  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+66], ub[x0+32], extent=[2], dst_stride=[25], src_stride=[1]  # op=0
  barrier  # op=0
  dma.f16 ub[x0+0], gm[x0+8], extent=[2,3], dst_stride=[3,1], src_stride=[12,1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vcopy.f16 ub[x0+32]{1,0}, ub[x0+0]{1,0}, count=6  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+68], ub[x0+32], extent=[2,3], dst_stride=[25,1], src_stride=[3,1]  # op=0
  barrier  # op=0
  dma.f16 ub[x0+0], gm[x0+4], extent=[6], dst_stride=[1], src_stride=[4]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vcopy.f16 ub[x0+32]{1,0}, ub[x0+0]{1,0}, count=6  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+74], ub[x0+32], extent=[2,3], dst_stride=[25,5], src_stride=[3,1]  # op=0
  barrier  # op=0
  dma.f16 ub[x0+0], gm[x0+2], extent=[6], dst_stride=[1], src_stride=[4]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vcopy.f16 ub[x0+32]{1,0}, ub[x0+0]{1,0}, count=6  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+76], ub[x0+32], extent=[2,3], dst_stride=[25,5], src_stride=[3,1]  # op=0
  barrier  # op=0
  dma.f16 ub[x0+0], gm[x0+0], extent=[6,3], dst_stride=[3,1], src_stride=[4,1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vcopy.f16 ub[x0+64]{1,0}, ub[x0+0]{1,0}, count=18  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+78], ub[x0+64], extent=[2,3,3], dst_stride=[25,5,1], src_stride=[9,3,1]  # op=0
  barrier  # op=0
  dma.f16 ub[x0+0], gm[x0+12], extent=[2], dst_stride=[1], src_stride=[12]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vcopy.f16 ub[x0+32]{1,0}, ub[x0+0]{1,0}, count=2  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+104], ub[x0+32], extent=[2], dst_stride=[25], src_stride=[1]  # op=0
  barrier  # op=0
  dma.f16 ub[x0+0], gm[x0+10], extent=[2], dst_stride=[1], src_stride=[12]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vcopy.f16 ub[x0+32]{1,0}, ub[x0+0]{1,0}, count=2  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+106], ub[x0+32], extent=[2], dst_stride=[25], src_stride=[1]  # op=0
  barrier  # op=0
  dma.f16 ub[x0+0], gm[x0+8], extent=[2,3], dst_stride=[3,1], src_stride=[12,1]  # op=0
  set_flag mte2, vector, 0  # op=0
  wait_flag mte2, vector, 0  # op=0
  vcopy.f16 ub[x0+32]{1,0}, ub[x0+0]{1,0}, count=6  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+108], ub[x0+32], extent=[2,3], dst_stride=[25,1], src_stride=[3,1]  # op=0
  barrier  # op=0

.program "Extracted from {main_graph}"
.gm_bytes 192
.op 0 /layernorm1/Mul
.buffer /layer1/Gemm_output_0 kind=input addr=0x0 bytes=64 dtype=f16 shape=[1,32]
.buffer /layernorm1/Mul_output_0 kind=output addr=0x40 bytes=64 dtype=f16 shape=[1,32]
.buffer layernorm1.weight kind=constant addr=0x80 bytes=64 dtype=f16 shape=[32]

.core 0
  dma.f16 ub[x0+0], gm[x0+0], extent=[32], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 0  # op=0
  dma.f16 ub[x0+64], gm[x0+128], extent=[32], dst_stride=[1], src_stride=[1]  # op=0
  set_flag mte2, vector, 1  # op=0
  wait_flag mte2, vector, 0  # op=0
  vdup.f16 ub[x0+128]{1,0}, 0, count=1  # op=0
  vmuls.f16 ub[x0+160]{1,32}, ub[x0+0]{1,0}, 0.03125, count=32  # op=0
  vrsum.f16 ub[x0+128]{0,0}, ub[x0+160]{1,32}, count=32  # op=0
  vsub.f16 ub[x0+224]{1,0}, ub[x0+0]{1,0}, ub[x0+128]{0,0}, count=32  # op=0
  vmul.f16 ub[x0+288]{1,0}, ub[x0+224]{1,0}, ub[x0+224]{1,0}, count=32  # op=0
  vdup.f16 ub[x0+352]{1,0}, 0, count=1  # op=0
  vmuls.f16 ub[x0+160]{1,32}, ub[x0+288]{1,0}, 0.03125, count=32  # op=0
  vrsum.f16 ub[x0+352]{0,0}, ub[x0+160]{1,32}, count=32  # op=0
  vadds.f16 ub[x0+160]{1,1}, ub[x0+352]{1,0}, 1e-05, count=1  # op=0
  vsqrt.f16 ub[x0+384]{1,0}, ub[x0+160]{1,1}, count=1  # op=0
  vrec.f16 ub[x0+384]{1,0}, ub[x0+384]{1,0}, count=1  # op=0
  wait_flag mte2, vector, 1  # op=0
  vmul.f16 ub[x0+160]{1,32}, ub[x0+224]{1,0}, ub[x0+384]{0,0}, count=32  # op=0
  vmul.f16 ub[x0+416]{1,0}, ub[x0+160]{1,32}, ub[x0+64]{1,0}, count=32  # op=0
  set_flag vector, mte3, 0  # op=0
  wait_flag vector, mte3, 0  # op=0
  dma.f16 gm[x0+64], ub[x0+416], extent=[32], dst_stride=[1], src_stride=[1]  # op=0
  barrier  # op=0

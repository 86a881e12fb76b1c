.program test_identity
.gm_bytes 64
.buffer x kind=input addr=0x0 bytes=8 dtype=f16 shape=[1,1,2,2]

.core 0

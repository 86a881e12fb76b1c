.program test_shape
.gm_bytes 192
.buffer x kind=input addr=0x0 bytes=120 dtype=f16 shape=[3,4,5]
.buffer y kind=constant addr=0x80 bytes=6 dtype=f16 shape=[3]

.core 0

.core 1

.core 2

.core 3

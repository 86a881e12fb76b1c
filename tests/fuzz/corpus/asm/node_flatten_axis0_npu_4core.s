.program test_flatten_axis0
.gm_bytes 256
.buffer a kind=input addr=0x0 bytes=240 dtype=f16 shape=[2,3,4,5]

.core 0

.core 1

.core 2

.core 3

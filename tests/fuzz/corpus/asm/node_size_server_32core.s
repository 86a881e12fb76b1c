.program test_size
.gm_bytes 192
.buffer x kind=input addr=0x0 bytes=120 dtype=f16 shape=[3,4,5]
.buffer y kind=constant addr=0x80 bytes=2 dtype=f16 shape=[]

.core 0

.core 1

.core 2

.core 3

.core 4

.core 5

.core 6

.core 7

.core 8

.core 9

.core 10

.core 11

.core 12

.core 13

.core 14

.core 15

.core 16

.core 17

.core 18

.core 19

.core 20

.core 21

.core 22

.core 23

.core 24

.core 25

.core 26

.core 27

.core 28

.core 29

.core 30

.core 31

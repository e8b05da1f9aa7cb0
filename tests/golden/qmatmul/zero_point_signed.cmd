qmatmul --m 1 --n 64 --k 128 --wtype i4 --zero-point --interp

qmatmul --m 1 --n 64 --k 128 --wtype u4 --json --interp

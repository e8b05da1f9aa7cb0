qmatmul --m 1 --n 64 --k 96 --wtype u4 --group 64 --interp

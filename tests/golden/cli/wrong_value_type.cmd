qmatmul --m sixteen --n 64 --k 64 --wtype u4

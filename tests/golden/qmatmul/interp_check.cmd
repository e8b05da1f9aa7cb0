qmatmul --m 3 --n 20 --k 64 --wtype i3 --group 32 --interp --check

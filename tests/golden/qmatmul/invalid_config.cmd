qmatmul --m 1 --n 64 --k 128 --wtype u4 --config bm16_bn20_bk64_sk64_w1x2_s2_k1 --interp

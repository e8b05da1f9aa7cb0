qmatmul --m 5 --n 24 --k 128 --wtype u4 --group k --atype bf16 --interp --check --config bm16_bn32_bk64_sk64_w1x1_s2_k2 --seed 3

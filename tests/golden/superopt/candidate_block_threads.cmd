superopt rmsnorm_linear.graph --candidate rmsnorm_linear_fused.graph --interp --block-threads 64,256 --print-kernels

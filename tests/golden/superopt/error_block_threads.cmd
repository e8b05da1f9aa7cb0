superopt rmsnorm_linear.graph --candidate rmsnorm_linear_fused.graph --interp --block-threads 128,100

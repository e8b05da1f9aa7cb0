superopt rmsnorm_linear.graph --candidate rmsnorm_linear_fused.graph --interp --max-memory 2K

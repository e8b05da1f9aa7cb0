superopt rmsnorm_linear.graph --candidate rmsnorm_linear_fused.graph --candidate rmsnorm_linear_fused_2.graph --interp

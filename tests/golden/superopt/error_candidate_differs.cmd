superopt rmsnorm_linear.graph --candidate wrong_fused.graph --interp

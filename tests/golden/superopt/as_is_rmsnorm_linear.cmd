superopt rmsnorm_linear_fused.graph --as-is --interp --print-kernels

superopt rmsnorm_linear.graph --interp --no-cache --max-memory 1K

superopt rmsnorm_linear.graph --interp --max-memory lots

superopt softmax.graph --interp --max-ops 5 --threads 1 --candidates 4 --print-kernels --no-cache

superopt ../../superopt/batched_matmul.graph --interp --no-cache --threads 1 --grid 1,2 --grid-z 1,2 --loop 1 --max-ops 2 --candidates 1

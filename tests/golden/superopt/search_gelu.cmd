superopt gelu.graph --interp --max-ops 2 --threads 1 --no-cache

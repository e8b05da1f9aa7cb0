superopt softmax.graph --interp --no-cache --split --max-ops 4 --threads 1 --candidates 2 --budget 600

superopt ../../superopt/attention_32.graph --interp --no-cache --threads 1 --grid 2 --loop 1 --max-ops 4 --candidates 1 --budget 600

superopt bmm3.graph --interp --no-cache --threads 1 --grid 1,2 --grid-z 1,2 --loop 1 --max-ops 2 --candidates 1

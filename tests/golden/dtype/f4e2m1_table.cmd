dtype f4e2m1 --table

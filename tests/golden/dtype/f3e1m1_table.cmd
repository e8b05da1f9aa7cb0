dtype f3e1m1 --table

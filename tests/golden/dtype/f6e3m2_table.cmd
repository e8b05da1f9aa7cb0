dtype f6e3m2 --table

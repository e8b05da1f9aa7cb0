dtype f7e5m1 --table

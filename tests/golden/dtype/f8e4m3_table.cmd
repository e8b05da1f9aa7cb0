dtype f8e4m3 --table

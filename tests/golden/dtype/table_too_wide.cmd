dtype f16 --table

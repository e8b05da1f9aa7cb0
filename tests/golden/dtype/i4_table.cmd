dtype i4 --table

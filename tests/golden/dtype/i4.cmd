dtype i4

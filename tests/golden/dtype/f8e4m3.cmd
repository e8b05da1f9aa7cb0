dtype f8e4m3

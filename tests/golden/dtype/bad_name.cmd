dtype f9e4m3

bench --shape 256x8192x8192

layout "swizzle(local(8, 8), dims=1)"

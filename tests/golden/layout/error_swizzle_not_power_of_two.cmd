layout "swizzle(local(8, 6), dim=1)"

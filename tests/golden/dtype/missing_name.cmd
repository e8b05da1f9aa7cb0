dtype

check error_gemm_split.tile

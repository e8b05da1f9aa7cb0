bench --gemm examples/tile/gemm_f16.tile --shape 256x8192

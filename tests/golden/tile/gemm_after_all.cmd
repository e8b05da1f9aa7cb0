print ../../../examples/tile/gemm_f16.tile --after all

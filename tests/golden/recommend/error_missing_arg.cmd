recommend ../../../examples/tile/gemm_f16.tile --arg M=4096

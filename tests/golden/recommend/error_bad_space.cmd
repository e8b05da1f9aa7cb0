recommend ../../../examples/tile/gemm_f16.tile --arg M=4096 --arg N=4096 --arg K=4096 --space BM=64,,128

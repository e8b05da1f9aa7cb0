recommend ../../../examples/tile/gemm_f16.tile --arg M=4096 --arg N=4096 --arg K=4096 --space BM=256 --space BN=256 --space BK=16,32 --space STAGES=2

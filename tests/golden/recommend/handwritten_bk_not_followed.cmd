recommend ../../../examples/gemm_f16_wgmma.tile --arg M=4096 --arg N=4096 --arg K=4096 --space BM=128 --space BN=256 --space BK=64,128 --space STAGES=4

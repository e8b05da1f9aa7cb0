recommend ../../../examples/tile/gemm_f16.tile --arg M=2048 --arg N=2048 --arg K=2048 --target a100 --space BM=64,128 --space BN=128,256 --space BK=32,64 --space STAGES=3 --space GROUP=1,8 --top 0

recommend ../../../examples/tile/gemm_f16.tile --arg M=8192 --arg N=1024 --arg K=8192 --target h200 --space BK=16,32,64 --space STAGES=2,3 --top 5

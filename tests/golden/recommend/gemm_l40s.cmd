recommend ../../../examples/tile/gemm_f16.tile --arg M=4096 --arg N=4096 --arg K=4096 --target L40S --space BK=16,32,64 --space STAGES=2,3 --top 5

print fig2_matmul.tile -D M=64 -D K=32

print fig2_matmul.tile -D M

print fig2_matmul.tile -D Q=1

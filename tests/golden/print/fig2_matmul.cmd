print fig2_matmul.tile

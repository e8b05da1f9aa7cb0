run tma_store_block_fence.tile --interp --in x_ptr=x32x8.npy --in y_ptr=y30x8.npy

run pack_layout_auto.tile --interp --in w_ptr=w_codes_32x16.npy --arg N=16 --arg K=32 --pack w_ptr

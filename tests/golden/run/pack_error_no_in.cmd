run pack_layout_auto.tile --interp --arg N=16 --arg K=32 --pack w_ptr

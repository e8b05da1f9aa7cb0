run ticket_wrong_block.tile --interp --in x_ptr=x64x32.npy --in p_ptr=p4x32.npy --in c_ptr=c2.npy --in y_ptr=y32.npy --arg N=32

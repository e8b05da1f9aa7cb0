run ticket_order_dependent.tile --interp --in c_ptr=c2.npy --in y_ptr=y4_i32.npy

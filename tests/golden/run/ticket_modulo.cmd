run ticket_modulo.tile --interp --in c_ptr=c2.npy

emit register_a_print.tile --arch sm_90a

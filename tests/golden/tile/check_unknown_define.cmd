check error_warp_specialize.tile --arch sm_90a -D NOPE=1

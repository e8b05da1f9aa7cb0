check valid.tile --arch sm_95

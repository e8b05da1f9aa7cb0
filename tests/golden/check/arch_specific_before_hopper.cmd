check valid.tile --arch sm_80a

print error_warp_specialize.tile --after pipeline_loops --arch sm_90a

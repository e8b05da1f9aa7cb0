print warp_specialized.tile --after pipeline_loops --arch sm_90a

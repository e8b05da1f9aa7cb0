print ../../../examples/tile/dequant_gemm_rs_groups.tile --after pipeline_loops --arch sm_90a

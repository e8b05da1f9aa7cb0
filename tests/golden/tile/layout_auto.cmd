print ../../../examples/tile/dequant_gemm_rs_packed.tile --after infer_layouts --arch sm_90a

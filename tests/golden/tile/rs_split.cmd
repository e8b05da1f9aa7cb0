print ../../../examples/tile/dequant_gemm_rs.tile -D BK=128 --after split_register_gemms --arch sm_90a

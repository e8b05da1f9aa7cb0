print lowering.tile --after analyze_nan_payload

print lowering.tile --after infer_threads

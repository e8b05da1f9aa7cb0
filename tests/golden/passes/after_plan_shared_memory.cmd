print lowering.tile --after plan_shared_memory

dtype u64

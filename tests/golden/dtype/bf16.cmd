dtype bf16

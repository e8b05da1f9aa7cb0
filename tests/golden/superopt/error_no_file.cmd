superopt missing.graph --interp

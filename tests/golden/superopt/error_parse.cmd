superopt unknown.graph --interp

superopt concat.graph --interp

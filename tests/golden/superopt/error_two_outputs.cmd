superopt two.graph --interp

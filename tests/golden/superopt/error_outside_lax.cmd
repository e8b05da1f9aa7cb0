superopt exp_exp.graph --interp

run regions_bug_deadlock.tile --interp --in x_ptr=x32x8.npy --schedule reverse

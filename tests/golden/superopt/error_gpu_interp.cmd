superopt softmax.graph --interp --gpu

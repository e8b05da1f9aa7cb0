superopt softmax.graph --gpu --no-cache

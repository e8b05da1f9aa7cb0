print index_values.tile --after lower_parallel

run iota.tile --interp

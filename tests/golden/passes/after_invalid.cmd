print invalid.tile --after all

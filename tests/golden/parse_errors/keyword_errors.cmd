print keyword_errors.tile

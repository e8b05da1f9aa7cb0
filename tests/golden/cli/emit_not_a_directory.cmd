emit /dev/null/x.tile

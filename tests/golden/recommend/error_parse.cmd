recommend broken.tile --arg M=64

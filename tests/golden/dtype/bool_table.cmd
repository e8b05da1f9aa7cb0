dtype bool --table

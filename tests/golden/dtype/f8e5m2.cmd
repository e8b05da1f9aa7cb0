dtype f8e5m2

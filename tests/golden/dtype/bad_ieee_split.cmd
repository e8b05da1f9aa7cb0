dtype f16e5m10

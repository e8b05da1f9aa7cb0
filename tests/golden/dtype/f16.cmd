dtype f16

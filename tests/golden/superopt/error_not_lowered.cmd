superopt gelu.graph --as-is --interp

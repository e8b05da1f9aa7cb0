dtype x4

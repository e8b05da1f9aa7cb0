layout "column_spatial(4, 2).local(1, 2)"

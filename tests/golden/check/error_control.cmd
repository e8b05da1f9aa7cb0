check error_control.tile

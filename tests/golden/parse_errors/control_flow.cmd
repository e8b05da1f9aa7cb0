print control_flow.tile

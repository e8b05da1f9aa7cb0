layout "register_layout(shape=[4, 2], mode_shape=[2, 2, 2], spatial_modes=[1, 0], local_modes=[2])"

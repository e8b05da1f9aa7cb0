run dot_async_no_fence.tile --interp

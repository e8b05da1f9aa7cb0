run dot_async_pipeline.tile --interp

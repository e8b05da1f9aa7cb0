run dot_async_in_flight.tile --interp

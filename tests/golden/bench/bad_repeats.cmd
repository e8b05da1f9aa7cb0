bench --repeats 0

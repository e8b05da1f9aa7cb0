bench --wtype q4

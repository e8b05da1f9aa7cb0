bench --workloads nope

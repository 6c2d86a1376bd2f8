"""Where an index loses recall, over the whole tree: the index map, the miss map, query workload,
self-reachability and boundary items (issue 24). Above search and validation, which it uses."""

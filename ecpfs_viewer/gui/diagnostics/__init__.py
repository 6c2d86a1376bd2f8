"""The index map and the diagnostics drawn on it (miss map, workload, self-reachability, boundary)."""

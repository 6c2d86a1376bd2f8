"""Drift: what inserts did to an index against a fresh build of its items, when to rebuild, and a
simulation of it before production (build on part of the rows, add the rest).

Above tuning and diagnostics: a drift report uses both (compare's recall and balance, the
self-reachability check) and the builder."""

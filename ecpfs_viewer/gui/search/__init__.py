"""The search panel: queries, the eCP path, recall and misses."""

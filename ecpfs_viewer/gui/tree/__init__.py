"""The tree panel: the lazy item model, its filter, columns and row marks."""

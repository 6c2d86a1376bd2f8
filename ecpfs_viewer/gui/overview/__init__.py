"""The overview panel: index, level and node pages and the projection view."""

"""The generic Zarr hierarchy: node paths, documents, listing, chunks, array reads."""

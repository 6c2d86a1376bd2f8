"""The metadata panel: zarr.json, decoded metadata and chunk statistics."""

"""ecpfs-viewer: browse, validate and build ecpfs vector indexes stored as Zarr v3."""

__version__ = "0.1.0"

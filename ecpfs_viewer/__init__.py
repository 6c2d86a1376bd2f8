"""ecpfs-viewer: browse, validate and build ecpfs vector indexes stored as Zarr v3."""

__version__ = "0.1.0"  # the one version number: pyproject.toml reads it from here
#: The folder name of our cache, log and settings directories.
APP_DIR_NAME = "ecpfs-viewer"

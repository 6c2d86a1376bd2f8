"""ecpfs-viewer: browse, validate and build ecpfs vector indexes stored as Zarr v3."""

import logging

__version__ = "0.1.0"  # the one version number: pyproject.toml reads it from here
#: The folder name of our cache and log directories.
APP_DIR_NAME = "ecpfs-viewer"

# Silent until the application configures logging (ecpfs_viewer.logs): a library must not print.
logging.getLogger(__name__).addHandler(logging.NullHandler())

"""Entry script for the PyInstaller bundle: the same `main` the `ecpfs-viewer` command runs."""

import sys

from ecpfs_viewer.cli import main

if __name__ == "__main__":
    sys.exit(main())

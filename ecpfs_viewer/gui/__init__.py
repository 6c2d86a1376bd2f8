"""PySide6 + pyqtgraph user interface on top of ecpfs_viewer.model."""

"""Data files shipped with ecpfs-viewer (icons, demo dataset); loaded with importlib.resources."""

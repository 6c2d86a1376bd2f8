"""Data files shipped with ecpfs-viewer (icons, demo dataset); loaded with importlib.resources.

The desktop entry, the AppStream metainfo and the icons are named after APP_ID, the reverse-DNS id
Flathub asks of an app hosted at github.com/ecpfs-viewer/ecpfs-viewer: io.github.<user>.<repo>,
four parts, with each '-' written '_' (a '-' is not allowed in the middle parts of a D-Bus or
Flatpak name, and appstreamcli discourages it in the last).
"""

APP_ID = "io.github.ecpfs_viewer.ecpfs_viewer"
#: the scalable icon, <APP_ID>.svg; the PNGs rendered from it are icons/<size>x<size>/<APP_ID>.png
ICON_SVG = f"{APP_ID}.svg"
DESKTOP_ENTRY = f"{APP_ID}.desktop"
METAINFO = f"{APP_ID}.metainfo.xml"

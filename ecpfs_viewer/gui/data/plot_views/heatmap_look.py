"""How the heatmap colours one array (map, reversed, scale, range), remembered per array.

A look chosen for one array (a log scale for a matrix of distances, say) says nothing about the
next: every array starts from :data:`DEFAULT_LOOK` (linear, robust range, viridis), and one the
user has styled gets its look back when it is shown again in this session. Nothing is kept across
runs: the global ``heatmap/colormap``, ``heatmap/scale`` and ``heatmap/range`` settings of earlier
versions (which made every array of the next index open on a log scale) are no longer read.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from ecpfs_viewer.gui.widgets.colormaps import COLORMAP_NAME
from ecpfs_viewer.model.views.color_scale import LINEAR, ROBUST

MAX_LOOKS = 256  # arrays whose look is remembered; the least recently shown is forgotten first
ArrayKey = tuple[str, str]  # (the store's label, the array's path)


@dataclass(frozen=True)
class HeatmapLook:
    colormap: str = COLORMAP_NAME  # a pyqtgraph map name (HEATMAP_COLORMAPS)
    reverse: bool = False
    scale: str = LINEAR  # LINEAR or LOG
    range: str = ROBUST  # ROBUST or FULL


DEFAULT_LOOK = HeatmapLook()


class LookMemory:
    """The looks the user chose, per array; arrays never styled have the default one."""

    def __init__(self) -> None:
        self._looks: OrderedDict[ArrayKey, HeatmapLook] = OrderedDict()

    def look_of(self, key: ArrayKey | None) -> HeatmapLook:
        look = self._looks.get(key) if key is not None else None
        if look is None or key is None:
            return DEFAULT_LOOK
        self._looks.move_to_end(key)
        return look

    def remember(self, key: ArrayKey | None, look: HeatmapLook) -> None:
        """Keep a look for an array (forgetting it when it is the default again)."""
        if key is None:
            return
        self._looks.pop(key, None)
        if look != DEFAULT_LOOK:
            self._looks[key] = look
            while len(self._looks) > MAX_LOOKS:
                self._looks.popitem(last=False)

    def forget(self, key: ArrayKey | None) -> None:
        if key is not None:
            self._looks.pop(key, None)

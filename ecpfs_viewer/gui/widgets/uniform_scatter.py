"""A scatter of points that all share one symbol, size, pen and brush, as a projection draws them.

pyqtgraph's ScatterPlotItem looks up each point's place in its symbol atlas one point at a time in
Python (a key tuple per point), which is most of the cost of showing a level's 40,000 points; when
every point has the same style, one lookup serves them all. The picture is the same (tested against
the stock item).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg

_STYLE = ["symbol", "size", "pen", "brush"]


class UniformScatterPlotItem(pg.ScatterPlotItem):  # type: ignore[misc]
    """A ScatterPlotItem for one style given as single values (never per-point lists)."""

    def updateSpots(self, dataSet: Any = None) -> None:
        data = self.data if dataSet is None else dataSet
        if self.opts["pxMode"] and self.opts["useCache"] and len(data):
            blank = data["sourceRect"]["w"] == 0
            if blank.any():
                first = np.flatnonzero(blank)[:1]
                style = tuple(values[0] for values in self._style(_STYLE, data=data, idx=first))
                data["sourceRect"][blank] = self.fragmentAtlas[[style]][0]
                self.invalidate()
        super().updateSpots(dataSet)

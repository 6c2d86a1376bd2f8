"""The one-style scatter draws exactly what pyqtgraph's own item draws, on every pyqtgraph we support."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtGui import QImage

from ecpfs_viewer.gui.widgets.uniform_scatter import UniformScatterPlotItem


def _picture(qtbot, item_type, x, y, **style) -> QImage:
    widget = pg.PlotWidget()
    qtbot.addWidget(widget)
    widget.resize(400, 300)
    item = item_type(x=x, y=y, **style)
    widget.plotItem.addItem(item)
    widget.plotItem.setRange(xRange=(-3, 3), yRange=(-3, 3), padding=0)
    widget.show()
    qtbot.waitExposed(widget)
    return widget.grab().toImage()


@pytest.mark.parametrize("style", [
    {"size": 5, "pen": None, "brush": pg.mkBrush("#4477aa")},
    {"size": 12, "pen": pg.mkPen("k", width=2), "brush": pg.mkBrush("#ffd400"), "symbol": "star"},
])
def test_it_draws_the_same_pixels_as_the_stock_scatter(qtbot, style) -> None:
    rng = np.random.default_rng(7)
    x, y = rng.normal(size=2_000), rng.normal(size=2_000)
    stock = _picture(qtbot, pg.ScatterPlotItem, x, y, **style)
    ours = _picture(qtbot, UniformScatterPlotItem, x, y, **style)
    assert ours == stock
    assert ours != _picture(qtbot, UniformScatterPlotItem, x[:1000], y[:1000], **style)


def test_new_data_gets_its_places_too(qtbot) -> None:
    """setData after construction (a redraw) fills the new points' atlas places, not only the first ones."""
    rng = np.random.default_rng(8)
    x, y = rng.normal(size=500), rng.normal(size=500)
    item = UniformScatterPlotItem(x=x, y=y, size=6, pen=None, brush=pg.mkBrush("r"))
    item.setData(x=x[::-1] * 0.5, y=y * 0.5, size=6, pen=None, brush=pg.mkBrush("r"))
    assert len(item.data) == 500
    assert np.all(item.data["sourceRect"]["w"] > 0)
    stock = pg.ScatterPlotItem(x=x[::-1] * 0.5, y=y * 0.5, size=6, pen=None, brush=pg.mkBrush("r"))
    assert np.array_equal(item.data["sourceRect"]["w"], stock.data["sourceRect"]["w"])

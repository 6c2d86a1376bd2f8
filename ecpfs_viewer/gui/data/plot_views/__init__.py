"""The views of the plot pane, one class each; the pane shows those whose priority is above 0."""

from __future__ import annotations

from ecpfs_viewer.gui.data.plot_views.base import PlotView
from ecpfs_viewer.gui.data.plot_views.heatmap import HeatmapView
from ecpfs_viewer.gui.data.plot_views.histogram import HistogramView
from ecpfs_viewer.gui.data.plot_views.line import LineView
from ecpfs_viewer.gui.data.plot_views.table import TableView
from ecpfs_viewer.gui.data.plot_views.text import ValueView

__all__ = ["HeatmapView", "HistogramView", "LineView", "PlotView", "TableView", "ValueView"]

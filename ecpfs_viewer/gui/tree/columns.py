"""Widths of the tree's two columns: the name column grows to the longest name listed so far (up
to what the pane can give while keeping the details column readable); the user can still drag it.

Measured once per listing from the new names only: ResizeToContents would measure every row on
each update (seconds for a 4,000-node level).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QHeaderView, QStyle, QTreeView

MIN_NAME_WIDTH = 120
MIN_DETAIL_WIDTH = 36


class TreeColumns(QObject):
    """Keeps column 0 (names) wide enough for the names listed, column 1 (details) takes the rest."""

    def __init__(self, tree: QTreeView, detail_sample: str) -> None:
        super().__init__(tree)
        self.tree = tree
        header = tree.header()
        header.setStretchLastSection(True)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Interactive)
        header.setMinimumSectionSize(40)
        self.detail_width = tree.fontMetrics().horizontalAdvance(detail_sample) + 16
        self.needed = MIN_NAME_WIDTH
        tree.viewport().installEventFilter(self)
        self.fit()

    def note_names(self, names: Iterable[str], depth: int) -> None:
        """Names just listed at depth (0 = the root row): widen the name column if they need it."""
        metrics = self.tree.fontMetrics()
        # the longest few by characters: measuring every name of a large level is too slow (benchmarks/bench_design.py)
        widest = max((metrics.horizontalAdvance(name) for name in heapq.nlargest(8, names, key=len)), default=0)
        icon = self.tree.style().pixelMetric(QStyle.PixelMetric.PM_SmallIconSize)
        needed = self.tree.indentation() * (depth + 1) + icon + widest + 16
        if needed > self.needed:
            self.needed = needed
            self.fit()

    def fit(self) -> None:
        """Name column: what the names need, at most what leaves the details column its width; in a
        narrow tree the names come first ("embeddings" is never elided to leave room for "2 x 2
        float32"), the details keeping at least MIN_DETAIL_WIDTH."""
        viewport = self.tree.viewport().width()
        room = viewport - self.detail_width
        if self.needed > room:
            room = min(self.needed, viewport - MIN_DETAIL_WIDTH)
        self.tree.header().resizeSection(0, max(MIN_NAME_WIDTH, min(self.needed, room)))

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Resize:
            self.fit()
        return False

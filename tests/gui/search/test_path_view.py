"""The Path tab as a user reads it: visit numbers and the opened nodes under each plot never overlap,
at any size or zoom; the axis says in words which node was opened when ("visited 1st")."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
from PySide6.QtGui import QImage, QPainter

from ecpfs_viewer.gui.search.path_view import SearchPathView, ordinal
from ecpfs_viewer.model.build.builder import BuildParams, build_index
from ecpfs_viewer.model.search import IndexReader, SearchParams
from ecpfs_viewer.model.search.explore import Exploration, QuerySpec, explore


@pytest.fixture(scope="module")
def crowded(tmp_path_factory: pytest.TempPathFactory) -> Exploration:
    """A search of a 3-level index of 3,000 vectors that opens many nodes (search_exp 24)."""
    folder = tmp_path_factory.mktemp("path_view")
    vectors = np.random.default_rng(4).normal(size=(3000, 8)).astype(np.float32)
    np.save(folder / "vectors.npy", vectors)
    build_index(folder / "vectors.npy", folder / "index.zarr", BuildParams(levels=3, target_cluster_items=12))
    return explore(IndexReader(folder / "index.zarr"), QuerySpec("item", item_id=5), SearchParams(k=10, search_exp=24))


def visit_labels(view: SearchPathView, plot) -> list:
    return [item for item in plot.items if item.__class__.__name__ == "TextItem"]


def drawn_tick_texts(plot) -> list[tuple[object, str]]:
    """(rectangle, text) of each tick label the bottom axis draws, as pyqtgraph lays them out."""
    axis = plot.getAxis("bottom")
    image = QImage(10, 10, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        _, _, texts = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return [(rect, text) for rect, _, text in texts if text]


def collisions(view: SearchPathView) -> list[str]:
    """What overlaps or is cut on screen: visit numbers, and the tick labels as the axis draws them."""
    found = []
    for level, plot in enumerate(view.shown_plots, 1):
        shown = [label for label in visit_labels(view, plot) if label.isVisible()]
        if not shown:
            found.append(f"level {level}: its first visit has no number")
        for a, b in combinations(shown, 2):
            if a.sceneBoundingRect().intersects(b.sceneBoundingRect()):
                found.append(f"level {level}: visits {a.toPlainText()} and {b.toPlainText()} overlap")
        inside = plot.getViewBox().sceneBoundingRect()
        found += [f"level {level}: visit {label.toPlainText()} is cut" for label in shown
                  if not inside.contains(label.sceneBoundingRect())]
        ticks = drawn_tick_texts(plot)
        if not ticks:
            found.append(f"level {level}: no node named under the axis")
        found += [f"level {level}: {ta!r} overlaps {tb!r}" for (a, ta), (b, tb) in combinations(ticks, 2)
                  if a.intersects(b)]
    return found


def assert_no_collisions(qtbot, view: SearchPathView) -> None:
    """Once the plots are drawn (labels follow the view's transform when it is next painted)."""
    try:
        qtbot.waitUntil(lambda: not collisions(view), timeout=5000)
    except AssertionError:
        raise AssertionError(collisions(view)) from None


def test_labels_never_collide_at_any_size_or_zoom_and_say_visited(qtbot, show, crowded) -> None:
    view: SearchPathView = show(SearchPathView(), 900, 420)
    view.set_exploration(crowded)
    assert len(view.shown_plots) == 3
    crowded_level = view.shown_plots[2]
    assert len(visit_labels(view, crowded_level)) > 10  # enough numbers to collide
    qtbot.waitUntil(lambda: all(p.getViewBox().width() > 0 for p in view.shown_plots), timeout=5000)
    assert_no_collisions(qtbot, view)
    hidden = [label for label in visit_labels(view, crowded_level) if not label.isVisible()]
    assert hidden, "a crowded level hides numbers rather than pile them into a blob"

    texts = [text for _, text in drawn_tick_texts(view.shown_plots[1])]
    assert all(", visited " in text for text in texts)
    first = next(o for o in crowded.opened if o.level == 1)
    assert texts[0] == f"node_{first.node_id}, visited {ordinal(first.visit)}"

    view.resize(1800, 500)  # wider: more room, and still no overlap
    qtbot.waitUntil(lambda: view.shown_plots[2].getViewBox().width() > 500, timeout=5000)
    assert_no_collisions(qtbot, view)
    box = crowded_level.getViewBox()
    (left, right), _ = box.viewRange()
    box.setXRange(left, left + (right - left) / 8, padding=0)  # zoomed in: crowded numbers come apart
    assert_no_collisions(qtbot, view)


def test_ordinals_read_as_words() -> None:
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st", "111th"]

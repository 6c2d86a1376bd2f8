"""The projection's legend: an entry for every colour drawn, a crowd of classes in one colour with
the current node highlighted, and "representative" listed once."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from index_factory import build_clustered_index  # tests/ is on sys.path (conftest)
from PySide6.QtGui import QColor, QPalette

from ecpfs_viewer.gui.overview.projection_view import LEGEND_LIMIT, ProjectionView
from ecpfs_viewer.model.ecpfs import shared_level_stats, summarize
from ecpfs_viewer.model.ecpfs.nodes import NodeRef
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.views.projection import ProjectionKind
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-level index of 6,000 vectors: 240 leaves under 16 parents, parents of 2 to 37 leaves."""
    return build_clustered_index(tmp_path_factory.mktemp("projection"), 6000, 8)


def project(qtbot, view: ProjectionView, h: Hierarchy, ref: NodeRef, *, leaf: bool = False,
            level: bool = False) -> None:
    view.set_node(h, ref, leaf=leaf)
    with qtbot.waitSignal(view.shown, timeout=30_000):
        if level:
            view.mode.setCurrentIndex(1)
        else:
            view.start()


def drawn_colours(view: ProjectionView) -> set[str]:
    """The brush colours of the points on the plot (the stars of representatives apart)."""
    return {item.opts["brush"].color().name(QColor.NameFormat.HexArgb) for item in view._items}


def test_a_leaf_lists_its_members_and_the_representative_once(qtbot, show, built) -> None:
    view: ProjectionView = show(ProjectionView(), 800, 600)
    project(qtbot, view, Hierarchy(open_store(built)), NodeRef(2, 40), leaf=True)
    assert view.projection.kind is ProjectionKind.LEAF
    assert view.legend_labels() == ["members", "representative"]


def test_a_node_with_few_children_names_each_colour(qtbot, show, built) -> None:
    h = Hierarchy(open_store(built))
    stats = shared_level_stats(h, 1, summarize(h))
    few = int(stats.node_ids[int(np.argmin(stats.sizes))])
    view: ProjectionView = show(ProjectionView(), 800, 600)
    project(qtbot, view, h, NodeRef(1, few))
    p = view.projection
    assert len(p.class_names) <= LEGEND_LIMIT
    assert view.legend_labels() == [p.class_names[c] for c in sorted(set(p.classes.tolist()))]
    assert len(drawn_colours(view)) == len(view.legend_labels())


def test_a_level_of_many_parents_is_one_colour_with_the_current_node_highlighted(qtbot, show, built) -> None:
    h = Hierarchy(open_store(built))
    view: ProjectionView = show(ProjectionView(), 800, 600)
    project(qtbot, view, h, NodeRef(2, 40), leaf=True, level=True)
    p = view.projection
    parents = len(p.class_names)
    assert p.kind is ProjectionKind.LEVEL and parents > LEGEND_LIMIT
    own = int(np.flatnonzero(p.ids == 40)[0])
    parent = p.class_names[int(p.classes[own])]
    assert view.legend_labels() == [f"other nodes ({parents:,} parents, one colour)", f"siblings under {parent}",
                                    "this node (lvl_2/node_40)"]
    assert len(drawn_colours(view)) == 2  # muted, and the highlight shared by the node and its siblings
    assert f"{parents:,} parents (too many to colour apart: hover a point to name its parent)" in \
        view.info_label.text()
    siblings = view._items[1]
    assert len(siblings.data) == int(np.count_nonzero(p.classes == p.classes[own]))


def test_the_crowd_colours_follow_a_dark_palette(qtbot, show, built) -> None:
    view: ProjectionView = show(ProjectionView(), 800, 600)
    project(qtbot, view, Hierarchy(open_store(built)), NodeRef(2, 40), leaf=True, level=True)
    light = drawn_colours(view)
    dark = QPalette(view.palette())
    dark.setColor(QPalette.ColorRole.Base, QColor(30, 30, 30))
    dark.setColor(QPalette.ColorRole.Text, QColor(230, 230, 230))
    view.setPalette(dark)
    assert view.plot_widget.backgroundBrush().color() == QColor(30, 30, 30)
    assert drawn_colours(view) != light and "#5ae6e6e6" in drawn_colours(view)  # muted: the text colour
    assert len(view.legend_labels()) == 3  # redrawn, not added to

"""The projection's legend: an entry for every colour drawn, a crowd of classes in one colour with
the current node highlighted, and "representative" listed once."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from index_factory import build_clustered_index  # tests/ is on sys.path (conftest)
from PySide6.QtGui import QColor, QPalette

from ecpfs_viewer.gui.overview.projection_view import LEGEND_LIMIT, ProjectionView
from ecpfs_viewer.gui.widgets.categorical import CATEGORICAL, MAX_CATEGORIES
from ecpfs_viewer.gui.widgets.contrast import contrast_ratio
from ecpfs_viewer.model.ecpfs import shared_level_stats, summarize
from ecpfs_viewer.model.ecpfs.nodes import NodeRef
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.views.projection import ProjectionKind
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-level index of 6,000 vectors: 240 leaves under 16 parents, parents of 2 to 37 leaves."""
    return build_clustered_index(tmp_path_factory.mktemp("projection"), 6000, 8)


@pytest.fixture(scope="module")
def crowded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-level index of 6,000 vectors in smaller leaves: 25 parents, more than colours tell apart."""
    return build_clustered_index(tmp_path_factory.mktemp("crowded"), 6000, 8, target_cluster_items=10)


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


def test_up_to_twenty_children_each_get_a_colour_of_their_own(qtbot, show, built) -> None:
    h = Hierarchy(open_store(built))
    stats = shared_level_stats(h, 1, summarize(h))
    sizes = stats.sizes.tolist()
    node = int(stats.node_ids[max(i for i, size in enumerate(sizes) if 12 < size <= MAX_CATEGORIES)])
    view: ProjectionView = show(ProjectionView(), 800, 600)
    project(qtbot, view, h, NodeRef(1, node))  # an internal node of 13 to 20 children
    p = view.projection
    assert 12 < len(p.class_names) <= MAX_CATEGORIES
    assert "too many" not in view.info_label.text()
    assert view.legend_labels() == [p.class_names[c] for c in sorted(set(p.classes.tolist()))]
    assert len(drawn_colours(view)) == len(view.legend_labels())
    project(qtbot, view, h, NodeRef(2, 40), leaf=True, level=True)  # 16 parents: coloured apart too
    assert len(view.projection.class_names) == 16 and len(drawn_colours(view)) == 16
    assert "too many" not in view.info_label.text()


def test_the_categorical_colours_are_told_apart_on_light_and_dark() -> None:
    def lab(hex_colour: str) -> np.ndarray:
        c = np.array([int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)]) / 255
        c = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
        xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ c
        f = np.cbrt(xyz / np.array([0.95047, 1.0, 1.08883]))
        return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])

    assert len(set(CATEGORICAL)) == MAX_CATEGORIES == 20
    points = np.array([lab(c) for c in CATEGORICAL])
    distances = np.linalg.norm(points[:, None] - points[None], axis=2) + np.eye(20) * 1e9
    assert distances.min() > 20  # every pair differs clearly (CIE76)
    for background in ("#ffffff", "#1e1e1e"):  # the light base and the dark theme's base
        assert min(contrast_ratio(QColor(c), QColor(background)) for c in CATEGORICAL) >= 1.6


def test_a_level_of_many_parents_is_one_colour_with_the_current_node_highlighted(qtbot, show, crowded) -> None:
    h = Hierarchy(open_store(crowded))
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


def test_the_crowd_colours_follow_a_dark_palette(qtbot, show, crowded) -> None:
    view: ProjectionView = show(ProjectionView(), 800, 600)
    project(qtbot, view, Hierarchy(open_store(crowded)), NodeRef(2, 40), leaf=True, level=True)
    light = drawn_colours(view)
    dark = QPalette(view.palette())
    dark.setColor(QPalette.ColorRole.Base, QColor(30, 30, 30))
    dark.setColor(QPalette.ColorRole.Text, QColor(230, 230, 230))
    view.setPalette(dark)
    assert view.plot_widget.backgroundBrush().color() == QColor(30, 30, 30)
    assert drawn_colours(view) != light and "#5ae6e6e6" in drawn_colours(view)  # muted: the text colour
    assert len(view.legend_labels()) == 3  # redrawn, not added to

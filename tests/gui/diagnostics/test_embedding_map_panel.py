"""View ▸ Panels ▸ Embedding map on an index of two well-separated clusters: the map opens (a first
picture, then every item), the clusters land apart on screen, colour-by changes the image, hover
names the leaf most present under the pointer, a box or a lasso lists the nodes above the items in
it, a click opens the leaf under the pointer, a search's path lands on its own leaf's points, and
another index resets it all. The figures are computed here from the placement's coordinates and
the vectors the index was built from."""

from __future__ import annotations

import itertools
import os
import stat
import sys
from pathlib import Path

import numpy as np
import pytest
from index_factory import build_two_clusters
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QPalette, QWheelEvent
from PySide6.QtWidgets import QApplication
from window_driver import open_window, run_recall, select, selected_path, wait_idle

from ecpfs_viewer.gui.diagnostics.embedding_jobs import MapData
from ecpfs_viewer.model.diagnostics.embedding_map import ViewRect
from ecpfs_viewer.model.diagnostics.embedding_map.placements import TSNE_STAND_IN
from ecpfs_viewer.model.diagnostics.index_map import leaf_ancestors

ITEMS, DIM = 600, 8


def _two_clusters(folder: Path) -> tuple[Path, np.ndarray]:
    """Two clusters 40 apart along a random direction: (index path, cluster of each item id)."""
    path, _data, side = build_two_clusters(folder, ITEMS, DIM)
    return path, side


@pytest.fixture(scope="module")
def clusters(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    return _two_clusters(tmp_path_factory.mktemp("embedding_map_gui"))


def _open_map(qtbot, path: Path):
    win = open_window(qtbot, path, 1280, 800)
    assert win.embedding_map.show_action in win.places.menu.actions()
    panel = win.embedding_map.panel
    firsts: list = []
    panel.first_shown.connect(firsts.append)
    win.embedding_map.show_action.trigger()
    qtbot.waitUntil(lambda: panel.data is not None and not panel.data.placement.sample and not panel.busy
                    and panel.view.frame is not None, timeout=30_000)
    panel.firsts = firsts  # the first pictures shown before every item was placed (none from the cache)
    return win, panel


def _on_screen(view, xy: np.ndarray) -> QPoint:
    return view.widget_pos(float(xy[0]), float(xy[1])).toPoint()


def test_the_map_opens_the_clusters_land_apart_and_colour_by_changes_the_image(qtbot, clusters) -> None:
    path, side = clusters
    _win, panel = _open_map(qtbot, path)
    placement = panel.data.placement
    assert placement.count == ITEMS
    assert not placement.from_cache  # the first opening of this index: progressive, the sample's picture first
    assert len(panel.firsts) == 1 and panel.firsts[0].placement.sample
    assert "two" not in panel.status.text() and f"{ITEMS:,} items" in panel.status.text()
    own_side = side[placement.item_ids]
    view = panel.view
    a = _on_screen(view, placement.coords[own_side == 0].mean(axis=0))
    b = _on_screen(view, placement.coords[own_side == 1].mean(axis=0))
    assert (a - b).manhattanLength() > view.width() / 4  # apart on screen, not only in numbers
    frame = view.frame
    assert frame.total == ITEMS  # the whole map in view, every item binned once
    # the picture holds items at both clusters and none half-way between them
    h, w = frame.counts.shape
    r = frame.rect
    def pixel(xy):
        return (min(h - 1, int((r.y1 - xy[1]) / r.height * h)), min(w - 1, int((xy[0] - r.x0) / r.width * w)))
    for c in (0, 1):
        y, x = pixel(placement.coords[own_side == c].mean(axis=0))
        assert frame.counts[max(0, y - 15):y + 15, max(0, x - 15):x + 15].sum() > 0
    y, x = pixel((placement.coords[own_side == 0].mean(axis=0) + placement.coords[own_side == 1].mean(axis=0)) / 2)
    assert frame.counts[max(0, y - 3):y + 3, max(0, x - 3):x + 3].sum() == 0

    assert panel.current() == "level1" and "level-1 cluster" in panel.legend_text()
    before = view.image.image.copy()
    panel.colour_by("leaf")
    qtbot.waitUntil(lambda: not panel.busy and view.frame is not frame, timeout=10_000)
    assert "leaf" in panel.legend_text()
    assert not np.array_equal(before, view.image.image)
    assert panel.colours is not None and panel.colours.id == "leaf"
    with qtbot.waitSignal(panel.exported, timeout=20_000) as written:  # drawn and written in a worker
        panel.export_png(str(path.parent / "map.png"))
    out = Path(written.args[0])
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and panel.status.text() == f"Saved {out}"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~umask and panel.export_button.isEnabled()
    panel.export_png(str(path.parent / "no such folder" / "map.png"))
    qtbot.waitUntil(lambda: panel.export_button.isEnabled(), timeout=20_000)
    assert "Could not export the map" in panel.status.text() and "no such folder" in panel.status.text()
    panel.show_marks(1)
    qtbot.waitUntil(lambda: panel.marks_shown().get(1, 0) > 0, timeout=10_000)
    assert panel.marks_shown()[1] == len(panel.data.index_map.band(1))


def test_hover_names_the_leaf_and_a_box_lists_the_nodes_inside(qtbot, clusters) -> None:
    path, side = clusters
    win, panel = _open_map(qtbot, path)
    view, placement = panel.view, panel.data.placement
    at = _on_screen(view, placement.coords[0])
    qtbot.mouseMove(view.viewport(), at)
    qtbot.waitUntil(lambda: bool(panel.hover_text), timeout=5_000)
    rect = view.rect_around(view.mapToScene(at))
    inside = ((placement.coords[:, 0] >= rect.x0) & (placement.coords[:, 0] <= rect.x1)
              & (placement.coords[:, 1] >= rect.y0) & (placement.coords[:, 1] <= rect.y1))
    counts = np.bincount(placement.leaf_pos[inside], minlength=placement.leaf_ids.size)
    top = int(placement.leaf_ids[int(np.argmax(counts))])
    assert counts.max() > 0
    assert panel.hover_text.splitlines()[0].startswith(f"lvl_2/node_{top}: {counts.max():,} items")

    own_side = side[placement.item_ids]
    x0, _x1, y0, y1 = placement.bounds()
    mid = (placement.coords[own_side == 0, 0].mean() + placement.coords[own_side == 1, 0].mean()) / 2
    left = own_side[placement.coords[:, 0] < mid][0]
    box = ViewRect(x0 - 1, mid, y0 - 1, y1 + 1)
    panel.select_rect(box)
    qtbot.waitUntil(lambda: panel.selection is not None, timeout=10_000)
    boxed = placement.coords[:, 0] < mid
    assert (own_side[boxed] == left).all() and boxed.sum() == (own_side == left).sum()
    leaves = {f"lvl_2/node_{int(n)}" for n in placement.leaf_ids[np.unique(placement.leaf_pos[boxed])]}
    listed = panel.selected_nodes()
    assert {p for p in listed if p.startswith("lvl_2/")} == leaves
    assert all(p.startswith(("lvl_1/", "lvl_2/")) for p in listed)
    assert str(boxed.sum()) in panel.selection_list.label.text()
    row = listed.index(sorted(leaves)[0])
    panel.selection_list.activated(row)  # what a double-click on the row does
    qtbot.waitUntil(lambda: selected_path(win) == sorted(leaves)[0], timeout=10_000)
    wait_idle(qtbot, win, 20_000)


def test_a_search_path_lands_on_its_leaf_and_another_index_resets_the_map(qtbot, clusters, tmp_path) -> None:
    path, _side = clusters
    win, panel = _open_map(qtbot, path)
    win.search.show_panel()
    search = win.search.panel
    search.form.item_edit.setText("7")
    with qtbot.waitSignal(search.finished, timeout=30_000):
        search.run()
    qtbot.waitUntil(lambda: panel.query is not None, timeout=5_000)
    placement = panel.data.placement
    query = panel.query
    own = placement.leaf_position(int(placement.leaf_ids[placement.leaf_pos[int(np.flatnonzero(
        placement.item_ids == 7)[0])]]))
    assert query.scanned_leaves[0] == int(placement.leaf_ids[own])  # the first leaf scanned is the item's own
    mine = placement.coords[placement.leaf_items(own)]
    assert np.allclose(query.query_xy, placement.coords[np.flatnonzero(placement.item_ids == 7)[0]], atol=1e-4)
    assert mine[:, 0].min() - 1e-4 <= query.query_xy[0] <= mine[:, 0].max() + 1e-4
    assert placement.item_ids[query.results[0]] == 7  # its own item comes back first, on its own point
    assert panel.view.query_items.data.size > 0

    other, _ = _two_clusters(tmp_path)
    win.open_location(str(other))
    qtbot.waitUntil(lambda: panel.data is None, timeout=10_000)
    assert panel.query is None and panel.selection is None and panel.selected_nodes() == []
    assert panel.view.frame is None and panel.legend_text() == ""


def _drag(qtbot, port, points: list[QPoint], release: bool = True) -> None:
    """Press at the first point, move through the others in steps of a few pixels, release at the last."""
    qtbot.mousePress(port, Qt.MouseButton.LeftButton, pos=points[0])
    for a, b in itertools.pairwise(points):
        for t in np.linspace(0.25, 1.0, 4):
            qtbot.mouseMove(port, QPoint(round(a.x() + (b.x() - a.x()) * t), round(a.y() + (b.y() - a.y()) * t)))
    if release:
        qtbot.mouseRelease(port, Qt.MouseButton.LeftButton, pos=points[-1])


def test_a_box_or_a_lasso_drag_lists_what_it_holds_without_panning_and_a_click_opens_the_leaf_there(
        qtbot, clusters, monkeypatch) -> None:
    import pyqtgraph as pg

    monkeypatch.setitem(pg.CONFIG_OPTIONS, "mouseRateLimit", 0)  # every move of the drag, not 100 a second
    path, side = clusters
    win, panel = _open_map(qtbot, path)
    view, placement = panel.view, panel.data.placement
    port = view.viewport()
    b = panel.data.density.bounds
    corners = [_on_screen(view, np.array([b.x0, b.y1])), _on_screen(view, np.array([b.x1, b.y0]))]
    panel.box_button.click()  # the toolbar toggle (QTest moves carry no modifiers, so Shift is not driven here)
    assert view.boxing
    before = view.view_rect()
    _drag(qtbot, port, corners)  # the whole map: every item in the box
    qtbot.waitUntil(lambda: panel.selection is not None and not panel.busy, timeout=10_000)
    assert panel.selection.count == placement.count
    assert view.view_rect() == before  # the drag selected; it did not pan
    boxed = panel.selection

    own_side = side[placement.item_ids]
    left = int(own_side[np.argmin(placement.coords[:, 0])])
    mine = placement.coords[own_side == left]
    centre, other = mine.mean(axis=0), placement.coords[own_side != left].mean(axis=0)
    reach = np.abs(mine - centre).max() * 1.5  # round every item of the cluster, short of the other one
    assert reach < np.abs(other - centre).max() / 2
    ring = [_on_screen(view, centre + reach * np.array([np.cos(a), np.sin(a)]))
            for a in np.linspace(0, 2 * np.pi, 13)[:-1]]
    qtbot.mouseClick(panel.lasso_button, Qt.MouseButton.LeftButton)
    assert view.select_mode == "lasso" and not panel.box_button.isChecked()
    _drag(qtbot, port, ring, release=False)
    assert view.drawing and len(view.selection_shape()) >= len(ring)  # the path follows the pointer
    qtbot.mouseRelease(port, Qt.MouseButton.LeftButton, pos=ring[-1])
    qtbot.waitUntil(lambda: panel.selection is not boxed and not panel.busy, timeout=10_000)
    assert view.view_rect() == before  # the drag drew; it did not pan
    chosen = panel.selection
    assert chosen.positions.tolist() == np.flatnonzero(own_side == left).tolist()
    leaves = {f"lvl_2/node_{int(n)}" for n in placement.leaf_ids[np.unique(placement.leaf_pos[own_side == left])]}
    assert {p for p in panel.selected_nodes() if p.startswith("lvl_2/")} == leaves
    assert f"{chosen.count:,} items in the lasso" in panel.selection_list.label.text()

    _drag(qtbot, port, ring[:6], release=False)  # another lasso, given up with Escape half-way
    assert view.drawing
    qtbot.keyClick(view, Qt.Key.Key_Escape)
    assert not view.drawing and not view.selection_shape().size
    qtbot.mouseRelease(port, Qt.MouseButton.LeftButton, pos=ring[5])
    assert panel.selection is chosen and not panel.selection_list.busy  # nothing asked, the list kept

    asked: list[str] = []
    panel.node_requested.connect(asked.append)
    qtbot.mouseClick(port, Qt.MouseButton.LeftButton, pos=_on_screen(view, (centre + other) / 2))
    assert asked == []  # a click on empty space opens nothing
    target = int(np.argmin(np.abs(placement.coords - other).sum(axis=1)))  # an item amid the other cluster
    at = _on_screen(view, placement.coords[target])
    rect = view.rect_around(view.mapToScene(at))
    xy = placement.coords
    under = (xy[:, 0] >= rect.x0) & (xy[:, 0] < rect.x1) & (xy[:, 1] >= rect.y0) & (xy[:, 1] < rect.y1)
    counts = np.bincount(placement.leaf_pos[under], minlength=placement.leaf_ids.size)
    top = f"lvl_2/node_{int(placement.leaf_ids[np.argmax(counts)])}"
    assert counts.max() > 0
    qtbot.mouseClick(port, Qt.MouseButton.LeftButton, pos=at)
    assert asked == [top]
    qtbot.waitUntil(lambda: selected_path(win) == top, timeout=10_000)  # the tree opens it, the map rings it
    ringed = np.flatnonzero(placement.leaf_pos == np.argmax(counts))
    qtbot.waitUntil(lambda: np.array_equal(panel.selected_items, ringed), timeout=5_000)
    wait_idle(qtbot, win, 20_000)


def test_the_misses_of_a_recall_sweep_are_offered_once_it_ran(qtbot, clusters) -> None:
    path, _side = clusters
    win, panel = _open_map(qtbot, path)
    with pytest.raises(ValueError, match="misses"):
        panel.colour_by("misses")  # offered greyed out: no sweep ran yet
    run_recall(qtbot, win, 40, "1")
    miss_map = win.index_map.panel.miss_map
    assert miss_map is not None
    qtbot.waitUntil(lambda: not panel.busy, timeout=10_000)
    panel.colour_by("misses")
    qtbot.waitUntil(lambda: not panel.busy, timeout=10_000)
    assert panel.colours is not None and panel.colours.id == "misses" and "misses" in panel.legend_text()
    lost = np.nansum(panel.colours.leaf_values)
    assert (lost > 0) == (miss_map.total() > 0)


def test_pictures_on_the_way_grow_say_how_far_and_keep_where_the_user_zoomed(qtbot, tmp_path) -> None:
    items = 2000  # about 200 leaves: pictures on the way while at most a quarter of them is read
    path, _data, _side = build_two_clusters(tmp_path, items, DIM, 5, levels=3, target_cluster_items=10)
    win = open_window(qtbot, path, 1280, 800)  # a fresh index: nothing of it in the cache
    panel = win.embedding_map.panel
    panel.fit_items, panel.block_leaves = 40, 8  # a sample of about 4 leaves, then 8 a block
    pictures: list = []
    zoomed: list = []

    def shown(data) -> None:
        pictures.append((data.placement.count, data.placement.sample, panel.status.text()))
        if not zoomed:  # the user zooms in on the first picture with the wheel
            port = panel.view.viewport()
            at = QPointF(port.rect().center())
            wheel = QWheelEvent(at, port.mapToGlobal(at), QPoint(0, 0), QPoint(0, 720), Qt.MouseButton.NoButton,
                                Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase, False)
            QApplication.sendEvent(port, wheel)
            zoomed.append(panel.view.view_rect())

    panel.picture_shown.connect(shown)
    win.embedding_map.show_action.trigger()
    qtbot.waitUntil(lambda: panel.data is not None and not panel.data.placement.sample and not panel.busy
                    and panel.view.frame is not None, timeout=30_000)
    counts = [count for count, *_ in pictures]
    assert len(pictures) >= 2 and counts == sorted(set(counts)) and counts[-1] < items
    assert all(sample for _, sample, *_ in pictures)
    assert "A first picture of" in pictures[0][2] and "placing the rest" in pictures[0][2]
    leaves = panel.data.placement.leaf_ids.size
    assert all(f"of {leaves:,} leaves" in text for _, _, text in pictures)
    assert f"{items:,} items" in panel.status.text()
    now, then = panel.view.view_rect(), zoomed[0]
    # kept: the same centre, still zoomed in (the aspect lock may settle the size a little)
    centre = ((now.x0 + now.x1) / 2, (now.y0 + now.y1) / 2)
    assert np.allclose(centre, ((then.x0 + then.x1) / 2, (then.y0 + then.y1) / 2))
    assert now.width < panel.data.density.bounds.width / 1.5
    assert panel.view.frame.total < items  # the zoomed view (between the clusters) holds part of the map


def test_a_cancel_keeps_the_picture_so_far_and_says_so_and_showing_the_panel_again_places_all(qtbot, tmp_path) -> None:
    path, _side = _two_clusters(tmp_path)
    win = open_window(qtbot, path, 1280, 800)
    panel = win.embedding_map.panel
    panel.fit_items, panel.block_leaves = 40, 1
    panel.first_shown.connect(lambda _data: panel.controls.cancel_button.click())  # the user cancels at once
    win.embedding_map.show_action.trigger()
    qtbot.waitUntil(lambda: "Cancelled" in panel.status.text() and not panel.busy, timeout=30_000)
    assert panel.data is not None and panel.data.placement.sample and panel.data.placement.count < ITEMS
    assert f"{panel.data.placement.count:,} items from" in panel.status.text()
    assert panel.view.frame is not None and panel.view.frame.total == panel.data.placement.count  # still drawn
    panel.first_shown.disconnect()
    win.embedding_map.show_action.trigger()
    qtbot.waitUntil(lambda: not panel.data.placement.sample and not panel.busy, timeout=30_000)
    assert panel.data.placement.count == ITEMS and f"{ITEMS:,} items" in panel.status.text()


def test_the_trees_selection_rings_its_items_and_a_node_opened_from_the_map_is_outlined_on_the_index_map(
        qtbot, clusters) -> None:
    path, _side = clusters
    win, panel = _open_map(qtbot, path)
    placement, index_map = panel.data.placement, panel.data.index_map
    leaf = int(placement.leaf_ids[3])
    select(qtbot, win, f"lvl_2/node_{leaf}")  # the tree (as the Index map or the Path tab opens a node)
    own = placement.leaf_items(3)
    qtbot.waitUntil(lambda: panel.selected_items.size == own.stop - own.start, timeout=5_000)
    assert np.array_equal(panel.selected_items, np.arange(own.start, own.stop))
    xs, ys = panel.view.selected.getData()
    assert np.allclose(np.column_stack([xs, ys]), placement.coords[own])  # rings on exactly its items
    top = int(index_map.band(1).node_ids[0])
    select(qtbot, win, f"lvl_1/node_{top}")
    under = np.flatnonzero(leaf_ancestors(index_map)[0] == 0)  # the leaves beneath it
    expected = np.concatenate([np.arange(placement.leaf_start[p], placement.leaf_start[p + 1]) for p in under])
    qtbot.waitUntil(lambda: panel.selected_items.size == expected.size, timeout=5_000)
    assert np.array_equal(panel.selected_items, expected)
    select(qtbot, win, "info")  # not a node: no rings
    qtbot.waitUntil(lambda: panel.selected_items.size == 0, timeout=5_000)
    assert panel.view.selected.getData()[0].size == 0

    b = panel.data.density.bounds
    panel.select_rect(b)  # the whole map in the box; open its first leaf from the list
    qtbot.waitUntil(lambda: panel.selection is not None, timeout=10_000)
    row = next(i for i, p in enumerate(panel.selected_nodes()) if p.startswith("lvl_2/"))
    picked = panel.selected_nodes()[row]
    panel.selection_list.activated(row)  # what a double-click on the row does
    qtbot.waitUntil(lambda: selected_path(win) == picked, timeout=10_000)
    assert win.index_map.panel.view.selected == (2, int(picked.split("node_")[1]))  # outlined there too
    assert panel.selected_items.size > 0  # and ringed here
    wait_idle(qtbot, win, 20_000)


def test_a_theme_chosen_while_the_map_is_shown_repaints_it(qtbot, clusters) -> None:
    """View > Theme > Dark with the map open: the plot's background and the picture's empty cells
    take the dark palette's base colour (they stayed white: the panel restyled before the view's
    own palette had changed)."""
    from ecpfs_viewer.gui.runtime.theme import Theme, apply_theme

    path, _side = clusters
    _win, panel = _open_map(qtbot, path)
    view = panel.view
    light = view.backgroundBrush().color().lightness()
    before = view.frame
    assert light > 200
    apply_theme(Theme.DARK)
    qtbot.waitUntil(lambda: view.palette().color(QPalette.ColorRole.Base).lightness() < 100, timeout=5_000)
    dark_base = view.palette().color(QPalette.ColorRole.Base)
    qtbot.waitUntil(lambda: view.backgroundBrush().color() == dark_base, timeout=5_000)
    qtbot.waitUntil(lambda: view.frame is not before and not view.busy, timeout=10_000)
    assert view.background_rgb() == (dark_base.red(), dark_base.green(), dark_base.blue())
    corner = view.grab().toImage().pixelColor(view.width() - 3, 3)  # no item there: the background
    assert corner.lightness() < 100, corner.name()


def test_the_placement_choice_makes_a_tsne_map_is_remembered_and_refused_without_opentsne(
        qtbot, clusters, monkeypatch) -> None:
    from ecpfs_viewer.gui.diagnostics.placement_choice import SETTING, PlacementChoice
    from ecpfs_viewer.gui.runtime.settings import settings
    from ecpfs_viewer.model.diagnostics.embedding_map.tsne import MISSING, LayoutProjection

    path, side = clusters
    _win, panel = _open_map(qtbot, path)
    choice, pca = panel.placement_choice, panel.data
    assert choice.method() == "pca" and [choice.itemText(i) for i in range(choice.count())] == [
        "PCA", "t-SNE of the representatives"]
    with monkeypatch.context() as absent:
        absent.setitem(sys.modules, "openTSNE", None)  # what an absent package does to an import
        choice.choose("tsne")
        assert panel.status.text() == MISSING and choice.method() == "pca" and panel.data is pca
        assert settings().value(SETTING, "pca") == "pca" and not panel.controls.busy
    pytest.importorskip("openTSNE")  # both legs of the suite install it (the layout extra)
    firsts: list[MapData] = []
    statuses: list[str] = []
    panel.first_shown.connect(lambda data: (firsts.append(data), statuses.append(panel.status.text())))
    choice.choose("tsne")
    qtbot.waitUntil(lambda: panel.data is not pca and not panel.data.placement.sample and not panel.busy
                    and panel.view.frame is not None, timeout=30_000)
    # the first picture came at once on the PCA axes (the cache's, whole), said to be a stand-in for
    # the layout being made
    [first] = firsts
    assert first.stand_in == TSNE_STAND_IN and not isinstance(first.placement.projection, LayoutProjection)
    assert statuses[0] == f"A first picture of all {ITEMS:,} items, {TSNE_STAND_IN} …"
    assert panel.data.stand_in == ""
    placement = panel.data.placement
    assert isinstance(placement.projection, LayoutProjection) and placement.count == ITEMS
    assert "t-SNE of the representatives of the" in panel.status.text()
    own_side = side[placement.item_ids]
    a = _on_screen(panel.view, placement.coords[own_side == 0].mean(axis=0))
    b = _on_screen(panel.view, placement.coords[own_side == 1].mean(axis=0))
    assert (a - b).manhattanLength() > panel.view.width() / 4  # apart on screen under t-SNE too
    assert settings().value(SETTING) == "tsne" and PlacementChoice().method() == "tsne"  # remembered


def test_points_in_view_share_one_brush_per_colour_and_carry_their_leafs_colour(qtbot, clusters) -> None:
    """Few items in view are drawn as points, each in its leaf's colour; pyqtgraph draws a symbol per
    brush object it meets on the GUI thread, so the points of one colour share one brush."""
    path, _side = clusters
    _win, panel = _open_map(qtbot, path)
    view = panel.view
    shown = view.frame.points
    assert shown is not None and shown.size == ITEMS
    brushes = list(view.points.data["brush"])
    drawn = np.array([b.color().getRgb()[:3] for b in brushes])
    placement = panel.data.placement
    expected = view._leaf_rgb[placement.leaf_pos[shown]]
    assert np.array_equal(drawn, expected)
    assert len({id(b) for b in brushes}) == len(np.unique(expected, axis=0)) < len(brushes)

"""The lazy tree model: listing on expand in the background, one insert per level, details, filter, refresh."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PySide6.QtCore import QCoreApplication, QModelIndex, Qt
from PySide6.QtWidgets import QTreeView

from ecpfs_viewer.gui.runtime.workers import thread_pool
from ecpfs_viewer.gui.tree.filter_proxy import TreeFilterProxy
from ecpfs_viewer.gui.tree.item_model import HierarchyTreeModel
from ecpfs_viewer.gui.tree.tree_item import LoadState
from ecpfs_viewer.model.ecpfs import cached_level_stats, shared_level_stats
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy
from ecpfs_viewer.model.zarrtree.nodes import NodeKind

GROUP = json.dumps({"zarr_format": 3, "node_type": "group"})


def array_doc(shape: list[int], dtype: str = "float32") -> str:
    return json.dumps({
        "zarr_format": 3, "node_type": "array", "shape": shape, "data_type": dtype,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [max(shape[0], 1), *shape[1:]]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]})


def write_level(root: Path, nodes: int) -> None:
    """A store with one level of `nodes` ecpfs-like nodes (node_i has i % 7 + 1 rows of embeddings)."""
    (root / "lvl_1").mkdir(parents=True)
    (root / "zarr.json").write_text(GROUP)
    (root / "lvl_1" / "zarr.json").write_text(GROUP)
    for i in range(nodes):
        node = root / "lvl_1" / f"node_{i}"
        (node / "embeddings").mkdir(parents=True)
        (node / "zarr.json").write_text(GROUP)
        (node / "embeddings" / "zarr.json").write_text(array_doc([i % 7 + 1, 4]))


@pytest.fixture
def model(qtbot) -> HierarchyTreeModel:
    model = HierarchyTreeModel()
    yield model
    model.clear()
    thread_pool().waitForDone(5000)


def open_model(model: HierarchyTreeModel, path: Path) -> QModelIndex:
    hierarchy = Hierarchy(open_store(path))
    hierarchy.root()
    model.set_hierarchy(hierarchy, path.name)
    return model.index(0, 0)


def fetch(qtbot, model: HierarchyTreeModel, index: QModelIndex) -> None:
    model.fetchMore(index)
    qtbot.waitUntil(lambda: model.item(index).state is LoadState.LISTED, timeout=5000)


def names(model: HierarchyTreeModel, parent: QModelIndex) -> list[str]:
    return [model.index(r, 0, parent).data() for r in range(model.rowCount(parent))]


def test_root_lists_on_fetch_in_natural_order_with_placeholder_first(qtbot, model, two_clusters_path):
    root = open_model(model, two_clusters_path)
    assert root.data() == "two_clusters.zarr"
    assert model.hasChildren(root) and model.rowCount(root) == 0 and model.canFetchMore(root)
    model.fetchMore(root)
    assert names(model, root) == ["Loading…"]  # placeholder while the worker lists
    qtbot.waitUntil(lambda: model.item(root).state is LoadState.LISTED, timeout=5000)
    assert names(model, root) == ["index_root", "info", "lvl_1", "lvl_2", "rep_embeddings", "rep_item_ids"]
    assert not model.canFetchMore(root)
    rep = model.index(4, 1, root)
    qtbot.waitUntil(lambda: rep.data() == "4 x 2  float32", timeout=5000)
    assert model.index(5, 1, root).data() == "4  uint32"
    assert model.index(2, 0, root).data(Qt.ItemDataRole.ToolTipRole) == "/lvl_1"


def test_ecpfs_nodes_show_their_rows(qtbot, model, two_clusters_path):
    root = open_model(model, two_clusters_path)
    fetch(qtbot, model, root)
    lvl_2 = model.index(3, 0, root)
    fetch(qtbot, model, lvl_2)
    assert names(model, lvl_2) == ["node_0", "node_1", "node_2", "node_3"]
    qtbot.waitUntil(lambda: model.index(3, 1, lvl_2).data() == "2 rows", timeout=5000)


def test_level_of_1500_nodes_arrives_in_one_insert_then_details_in_batches(qtbot, model, tmp_path):
    write_level(tmp_path / "big.zarr", 1500)
    root = open_model(model, tmp_path / "big.zarr")
    fetch(qtbot, model, root)
    level = model.index(0, 0, root)
    inserts: list[tuple[int, int]] = []
    removals: list[tuple[int, int]] = []
    changes: list[tuple[int, int, int, int]] = []
    model.rowsInserted.connect(lambda parent, first, last: inserts.append((first, last))
                               if parent == level else None)
    model.rowsRemoved.connect(lambda parent, first, last: removals.append((first, last)))
    model.dataChanged.connect(lambda top, bottom, roles: changes.append(
        (top.row(), bottom.row(), top.column(), bottom.column())))
    fetch(qtbot, model, level)
    # the placeholder, then the placeholder row becomes node_0 and the others are inserted after it:
    # no row is removed (a removal makes QTreeView lay out every expanded row again)
    assert inserts == [(0, 0), (1, 1499)] and removals == []
    assert changes[0] == (0, 0, 0, 1)
    assert model.rowCount(level) == 1500
    first = names(model, level)[:12]
    assert first == [f"node_{i}" for i in range(12)]  # natural order: node_2 before node_10
    assert model.index(0, 0, level).data(Qt.ItemDataRole.ToolTipRole) == "/lvl_1/node_0"
    assert model.item(model.index(0, 0, level)).kind is NodeKind.GROUP
    qtbot.waitUntil(lambda: model.index(1499, 1, level).data() == f"{1499 % 7 + 1} rows", timeout=10000)
    assert model.index(0, 1, level).data() == "1 row"
    details = changes[1:]
    assert 1 < len(details) <= 1500 // 100  # filled in batches, not row by row
    assert all(c[2:] == (1, 1) for c in details)  # the details column only: no per-row hasChildren
    assert sorted(r for c in details for r in range(c[0], c[1] + 1)) == list(range(1500))


def test_collection_waits_from_a_large_listing_until_its_rows_are_linked_in(qtbot, model, tmp_path, monkeypatch):
    """The rows of a large listing are frozen once linked in; a young pass between the worker's
    end and the linking walked every one of them on the GUI thread (200,000 rows at 10M items:
    180 ms, then 130 ms for the middle-aged pass)."""
    from ecpfs_viewer.gui.runtime import collector as collector_module

    write_level(tmp_path / "big.zarr", 1500)
    root = open_model(model, tmp_path / "big.zarr")
    fetch(qtbot, model, root)
    held_when_linked: list[bool] = []
    on_listed = model._on_listed

    def linked(*args):  # type: ignore[no-untyped-def]
        held_when_linked.append(collector_module._collection_held())
        on_listed(*args)

    monkeypatch.setattr(model, "_on_listed", linked)
    fetch(qtbot, model, model.index(0, 0, root))
    assert held_when_linked == [True]  # from the worker's start until the rows are linked in and frozen
    assert not collector_module._collection_held()  # and no longer once they are


def test_a_collection_hold_ends_when_ended_or_past_its_bound_and_never_keeps_others_from_ending(monkeypatch):
    from ecpfs_viewer.gui.runtime import collector as collector_module

    forgotten, hold = collector_module.CollectionHold(), collector_module.CollectionHold()
    assert collector_module._collection_held()
    hold.end()
    hold.end()  # twice: harmless
    assert collector_module._collection_held()  # the other one still holds
    monkeypatch.setattr(collector_module, "DEFER_AT_MOST_S", 0.0)
    assert not collector_module._collection_held()  # a hold never ended holds only for its bound
    monkeypatch.setattr(collector_module, "DEFER_AT_MOST_S", 3600.0)
    fresh = collector_module.CollectionHold()
    assert collector_module._collection_held()  # the expired one, dropped, does not end a new one early
    fresh.end()
    forgotten.end()
    assert not collector_module._collection_held()


def test_listed_group_keeps_expanded_view_consistent(qtbot, model, two_clusters_path):
    """A group listed while expanded shows its rows (placeholder reused) and a group with no
    children drops its placeholder."""
    root = open_model(model, two_clusters_path)
    view = QTreeView()
    qtbot.addWidget(view)
    view.setModel(model)
    view.show()
    view.expand(root)
    qtbot.waitUntil(lambda: model.item(root).state is LoadState.LISTED, timeout=5000)
    assert names(model, root)[0] == "index_root"
    node = model.index(2, 0, root)
    view.expand(node)
    qtbot.waitUntil(lambda: model.item(node).state is LoadState.LISTED, timeout=5000)
    assert names(model, node) == ["node_0", "node_1"]
    assert view.isExpanded(node) and view.visualRect(model.index(1, 0, node)).isValid()
    view.setCurrentIndex(model.index(0, 0, node))
    assert model.item(view.currentIndex()).path == "lvl_1/node_0"


def test_empty_group_drops_its_placeholder(qtbot, model, tmp_path):
    write_level(tmp_path / "empty.zarr", 0)
    root = open_model(model, tmp_path / "empty.zarr")
    fetch(qtbot, model, root)
    level = model.index(0, 0, root)
    fetch(qtbot, model, level)
    assert model.rowCount(level) == 0 and not model.hasChildren(level)


def test_error_node_beside_readable_siblings(qtbot, model, two_clusters_copy):
    (two_clusters_copy / "lvl_2" / "node_1" / "zarr.json").write_text("{not json")
    root = open_model(model, two_clusters_copy)
    fetch(qtbot, model, root)
    lvl_2 = model.index(3, 0, root)
    fetch(qtbot, model, lvl_2)
    bad = model.index(1, 0, lvl_2)
    assert model.item(bad).kind is NodeKind.ERROR
    assert "not valid JSON" in bad.data(Qt.ItemDataRole.ToolTipRole)
    assert "lvl_2/node_1/zarr.json" in bad.data(Qt.ItemDataRole.ToolTipRole)
    assert model.item(model.index(2, 0, lvl_2)).kind is NodeKind.GROUP
    qtbot.waitUntil(lambda: model.index(2, 1, lvl_2).data() == "2 rows", timeout=5000)


def test_unreadable_array_metadata_becomes_an_error_row(qtbot, model, two_clusters_copy):
    doc = json.loads((two_clusters_copy / "rep_item_ids" / "zarr.json").read_text())
    doc["codecs"] = [{"name": "bytes"}, {"name": "no_such_codec"}]
    (two_clusters_copy / "rep_item_ids" / "zarr.json").write_text(json.dumps(doc))
    root = open_model(model, two_clusters_copy)
    fetch(qtbot, model, root)
    bad = model.index(5, 0, root)
    qtbot.waitUntil(lambda: model.index(5, 1, root).data() == "unreadable metadata", timeout=5000)
    assert "no_such_codec" in bad.data(Qt.ItemDataRole.ToolTipRole)
    assert model.index(4, 1, root).data() == "4 x 2  float32"


def test_stale_listing_after_close_is_dropped(qtbot, model, tmp_path):
    write_level(tmp_path / "big.zarr", 300)
    root = open_model(model, tmp_path / "big.zarr")
    fetch(qtbot, model, root)
    model.fetchMore(model.index(0, 0, root))
    model.clear()  # the store is closed while lvl_1 is being listed
    assert thread_pool().waitForDone(5000)
    QCoreApplication.processEvents()  # deliver the queued results: they must be ignored
    assert model.rowCount() == 0


def test_refresh_relists_a_grown_group(qtbot, model, two_clusters_copy):
    root = open_model(model, two_clusters_copy)
    fetch(qtbot, model, root)
    lvl_2 = model.index(3, 0, root)
    fetch(qtbot, model, lvl_2)
    import shutil

    shutil.copytree(two_clusters_copy / "lvl_2" / "node_3", two_clusters_copy / "lvl_2" / "node_10")
    assert names(model, lvl_2)[-1] == "node_3"  # cached until refreshed
    model.refresh(lvl_2)
    qtbot.waitUntil(lambda: model.item(lvl_2).state is LoadState.LISTED, timeout=5000)
    assert names(model, lvl_2) == ["node_0", "node_1", "node_2", "node_3", "node_10"]


def test_filter_matches_loaded_rows_without_listing_more(qtbot, model, two_clusters_path):
    root = open_model(model, two_clusters_path)
    fetch(qtbot, model, root)
    lvl_2 = model.index(3, 0, root)
    fetch(qtbot, model, lvl_2)
    proxy = TreeFilterProxy()
    proxy.setSourceModel(model)
    view = QTreeView()
    qtbot.addWidget(view)
    view.setModel(proxy)
    view.show()
    proxy.set_filter_text("node_3")
    proot = proxy.index(0, 0)
    visible = [proxy.index(r, 0, proot).data() for r in range(proxy.rowCount(proot))]
    assert visible == ["lvl_2"]
    plvl = proxy.index(0, 0, proot)
    assert [proxy.index(r, 0, plvl).data() for r in range(proxy.rowCount(plvl))] == ["node_3"]
    proxy.set_filter_text("LVL_2/NODE_0")  # paths match too, case-insensitively
    assert [proxy.index(r, 0, plvl).data() for r in range(proxy.rowCount(plvl))] == ["node_0"]
    assert thread_pool().waitForDone(5000)  # a listing the filter started would have ended
    QCoreApplication.processEvents()
    hierarchy = model.hierarchy
    assert not hierarchy.is_listed("lvl_1") and not hierarchy.is_listed("lvl_2/node_0")
    proxy.set_filter_text("")
    assert proxy.rowCount(proot) == 6


def test_reveal_lists_ancestors_and_reports_the_index(qtbot, model, two_clusters_path):
    open_model(model, two_clusters_path)
    with qtbot.waitSignal(model.path_revealed, timeout=5000) as signal:
        model.reveal("lvl_2/node_3/item_ids")
    index = signal.args[0]
    assert index.data() == "item_ids"
    assert index.parent().data() == "node_3"


def test_node_rows_come_from_shared_level_stats_without_reading_nodes(qtbot, model, two_clusters_path):
    """Once validation or the overview computed a level's statistics, its rows cost no request."""
    root = open_model(model, two_clusters_path)
    hierarchy = model.hierarchy
    stats = shared_level_stats(hierarchy, 2)
    fetch(qtbot, model, root)
    before = hierarchy.store.stats().requests
    lvl_2 = model.index(3, 0, root)
    fetch(qtbot, model, lvl_2)  # listed already by the statistics: no request either
    qtbot.waitUntil(lambda: model.index(3, 1, lvl_2).data() == "2 rows", timeout=5000)
    assert [model.index(r, 1, lvl_2).data() for r in range(4)] == [f"{n} rows" for n in stats.sizes.tolist()]
    qtbot.waitUntil(lambda: not model.is_busy(), timeout=5000)
    assert hierarchy.store.stats().requests == before  # no node or embeddings document read


def test_node_rows_scan_only_unambiguous_documents(qtbot, model, tmp_path):
    """Rows read by scanning the stored bytes agree with a full parse, even when attributes also
    hold a "shape" or the document is not an array."""
    root = tmp_path / "odd.zarr"
    write_level(root, 3)
    emb = root / "lvl_1" / "node_1" / "embeddings" / "zarr.json"
    doc = json.loads(array_doc([5, 4]))
    emb.write_text(json.dumps({"attributes": {"shape": [99], "node_type": "array"}, **doc}))
    (root / "lvl_1" / "node_2" / "embeddings" / "zarr.json").write_text(GROUP)  # not an array: no rows
    model_root = open_model(model, root)
    fetch(qtbot, model, model_root)
    level = model.index(0, 0, model_root)
    fetch(qtbot, model, level)
    qtbot.waitUntil(lambda: not model.is_busy(), timeout=5000)
    assert [model.index(r, 1, level).data() for r in range(3)] == ["1 row", "5 rows", ""]


def test_the_model_is_busy_from_a_listing_until_its_rows_are_described(qtbot, model, tmp_path):
    """The rows' details start on the event-loop turn after the listing: between the two the model
    still says busy, so a caller waiting for "not busy" never reads blank second columns."""
    root = tmp_path / "level.zarr"
    write_level(root, 3)
    model_root = open_model(model, root)
    fetch(qtbot, model, model_root)
    busy_when_listed: list[bool] = []
    model.listing_finished.connect(lambda path, _result: busy_when_listed.append(model.is_busy()))
    fetch(qtbot, model, model.index(0, 0, model_root))
    assert busy_when_listed == [True]
    qtbot.waitUntil(lambda: not model.is_busy(), timeout=5000)
    assert all(model.index(r, 1, model.index(0, 0, model_root)).data() for r in range(3))


def test_refreshing_a_node_drops_its_level_statistics(qtbot, model, two_clusters_copy):
    root = open_model(model, two_clusters_copy)
    hierarchy = model.hierarchy
    fetch(qtbot, model, root)
    lvl_2 = model.index(3, 0, root)
    fetch(qtbot, model, lvl_2)
    shared_level_stats(hierarchy, 1)
    shared_level_stats(hierarchy, 2)
    model.refresh(model.index(1, 0, lvl_2))
    assert cached_level_stats(hierarchy, 2) is None and cached_level_stats(hierarchy, 1) is not None


def test_marks_layers_show_icon_tooltip_and_tint(qtbot, model: HierarchyTreeModel, two_clusters_path: Path) -> None:
    from ecpfs_viewer.gui.tree.marks import MarkKind, RowMark

    root = open_model(model, two_clusters_path)
    fetch(qtbot, model, root)
    lvl_1 = model.index_for_path("lvl_1")
    plain_icon = model.data(lvl_1, Qt.ItemDataRole.DecorationRole).cacheKey()
    assert model.data(lvl_1, Qt.ItemDataRole.BackgroundRole) is None
    changed: list[str] = []
    model.dataChanged.connect(lambda first, _last, _roles: changed.append(model.item(first).path))
    model.set_marks("validation", {"lvl_1": RowMark(MarkKind.WARNING, "1 node is empty")})
    model.set_marks("search", {"lvl_1": RowMark(MarkKind.VISITED, "visited 1st (score 0.5)")})
    assert changed == ["lvl_1", "lvl_1"]
    assert model.data(lvl_1, Qt.ItemDataRole.DecorationRole).cacheKey() != plain_icon
    assert model.data(lvl_1, Qt.ItemDataRole.ToolTipRole) == "/lvl_1\n1 node is empty\nvisited 1st (score 0.5)"
    assert model.data(lvl_1, Qt.ItemDataRole.BackgroundRole) is not None
    model.set_marks("search", {})  # a new search clears only its own layer
    assert model.data(lvl_1, Qt.ItemDataRole.BackgroundRole) is None
    assert [m.tooltip for m in model.marks_at("lvl_1")] == ["1 node is empty"]
    model.set_marks("validation", {"lvl_2/node_3": RowMark(MarkKind.ERROR, "missing item_ids")})  # not listed yet
    fetch(qtbot, model, model.index_for_path("lvl_2"))
    assert "missing item_ids" in model.data(model.index_for_path("lvl_2/node_3"), Qt.ItemDataRole.ToolTipRole)


def test_reveal_takes_any_spelling_of_a_path_while_levels_are_listed(qtbot, model, two_clusters_path):
    """Repeated and outer slashes name the same node, however many levels are still being listed
    when the walk goes on (an IndexError in the walk before paths were parsed first)."""
    open_model(model, two_clusters_path)
    with qtbot.waitSignal(model.path_revealed, timeout=5000) as signal:
        model.reveal(" //lvl_2//node_3/ ")
    assert model.item(signal.args[0]).path == "lvl_2/node_3"


@pytest.mark.parametrize(("path", "said"), [
    ("../..", "'..' is not a node name"),
    ("lvl_2/./node_3", "'.' is not a node name"),
    ("lvl_2/node_3/embeddings/inside", "lvl_2/node_3/embeddings/inside: no such node"),
])
def test_reveal_refuses_a_path_that_names_no_node_in_words(qtbot, model, two_clusters_path, path, said):
    open_model(model, two_clusters_path)
    with qtbot.waitSignal(model.listing_failed, timeout=5000) as signal:
        model.reveal(path)
    assert said in signal.args[1]
    with qtbot.waitSignal(model.path_revealed, timeout=5000):  # the tree still goes where it is asked
        model.reveal("lvl_1/node_1")


def test_a_group_over_the_large_limit_shows_its_children_in_ranges(qtbot, model, tmp_path):
    """40,000 rows under one expanded group cost QTreeView a Python call or two per row on every
    layout: a large group shows ranges of its children, each holding them, found by path as before."""
    write_level(tmp_path / "big.zarr", 25)
    model.large_group = 10  # ranges.RANGE_ROWS (250) a range; 25 nodes: one range
    root = open_model(model, tmp_path / "big.zarr")
    fetch(qtbot, model, root)
    level = model.index(0, 0, root)
    fetch(qtbot, model, level)
    assert names(model, level) == ["0 … 24"]
    span = model.index(0, 0, level)
    assert model.item(span).ranged and model.item(span).path == "lvl_1"  # it stands for its group
    assert span.data(Qt.ItemDataRole.ToolTipRole) == "/lvl_1: node_0 … node_24 (25 rows)"
    assert model.hasChildren(span) and not model.canFetchMore(span) and model.rowCount(span) == 25
    assert names(model, span)[:3] == ["node_0", "node_1", "node_2"]
    assert model.index(0, 1, level).data() == "25 children"
    node = model.index_for_path("lvl_1/node_24")
    assert node.isValid() and node.parent() == span and node.parent().parent() == level
    assert model.index_for_path("lvl_1") == level  # the group's path still names the group
    qtbot.waitUntil(lambda: model.index(24, 1, span).data() == f"{24 % 7 + 1} rows", timeout=10000)
    proxy = TreeFilterProxy()
    proxy.setSourceModel(model)
    proxy.set_filter_text("node_24")  # the range shows as the match's ancestor, not as a match
    shown_level = proxy.mapFromSource(level)
    shown_span = proxy.index(0, 0, shown_level)
    assert proxy.rowCount(shown_level) == 1 and proxy.rowCount(shown_span) == 1
    assert proxy.index(0, 0, shown_span).data() == "node_24"


def test_ranges_hold_range_rows_each_and_a_refreshed_range_relists_its_group(qtbot, model, tmp_path):
    from ecpfs_viewer.gui.tree.ranges import in_ranges
    from ecpfs_viewer.gui.tree.tree_item import TreeItem

    owner = TreeItem("lvl_1", "lvl_1", NodeKind.GROUP, None)
    rows = [TreeItem(f"lvl_1/node_{i}", f"node_{i}", NodeKind.GROUP, owner, i) for i in range(2500)]
    assert in_ranges(owner, rows, large=2500) is rows  # up to the limit: the rows themselves
    ranges = in_ranges(owner, rows, large=2000, size=1000)
    assert [r.name for r in ranges] == ["0 … 999", "1000 … 1999", "2000 … 2499"]
    assert [len(r.children) for r in ranges] == [1000, 1000, 500]
    assert rows[1500].parent is ranges[1] and rows[1500].row == 500
    write_level(tmp_path / "big.zarr", 12)
    model.large_group = 10
    root = open_model(model, tmp_path / "big.zarr")
    fetch(qtbot, model, root)
    level = model.index(0, 0, root)
    fetch(qtbot, model, level)
    refreshed = model.refresh(model.index(0, 0, level))  # a range's Refresh re-lists its group
    assert refreshed == level
    qtbot.waitUntil(lambda: model.item(level).state is LoadState.LISTED, timeout=5000)
    assert names(model, level) == ["0 … 11"]

"""Row details under a collapsed row change nothing on screen: no repaint while they arrive."""

from __future__ import annotations

from pathlib import Path

import pytest

from ecpfs_viewer.gui.runtime.workers import thread_pool
from ecpfs_viewer.gui.tree.panel import TreePanel
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

from .test_tree_model import write_level


@pytest.fixture
def panel(qtbot) -> TreePanel:
    panel = TreePanel()
    qtbot.addWidget(panel)
    panel.resize(400, 600)
    panel.show()
    yield panel
    panel.tree_model.clear()
    thread_pool().waitForDone(5000)


def open_level(qtbot, panel: TreePanel, path: Path, nodes: int) -> list[tuple[int, int, int]]:
    """Open the store, expand its root and lvl_1 as a user would; wait for every node's row count.
    Returns the (first row, last row, column) of each dataChanged of the details column."""
    write_level(path, nodes)
    model = panel.tree_model
    hierarchy = Hierarchy(open_store(path))
    hierarchy.root()
    model.set_hierarchy(hierarchy, path.name)
    changed: list[tuple[int, int, int]] = []
    model.dataChanged.connect(lambda first, last, *_: changed.append((first.row(), last.row(), first.column())))
    panel.tree.expand(model.index(0, 0))
    qtbot.waitUntil(lambda: model.is_loaded("lvl_1") or model.is_loaded(""), timeout=10000)
    qtbot.waitUntil(lambda: model.index_for_path("lvl_1").isValid(), timeout=10000)
    panel.tree.expand(panel.view_index(model.index_for_path("lvl_1")))
    last = f"lvl_1/node_{nodes - 1}"
    qtbot.waitUntil(lambda: model.index_for_path(last).isValid()
                    and model.index_for_path(last, 1).data() == f"{(nodes - 1) % 7 + 1} rows"
                    and not model.is_busy(), timeout=10000)
    return changed


def test_details_of_rows_in_a_collapsed_range_are_shown_when_the_range_is_expanded(qtbot, panel, tmp_path):
    model = panel.tree_model
    model.large_group = 10  # 25 nodes: lvl_1 shows one range, collapsed
    changed = open_level(qtbot, panel, tmp_path / "big.zarr", 25)
    assert [c for c in changed if c[2] == 1 and c[1] - c[0] > 0] == []  # no repaint for rows nobody sees
    level = panel.view_index(model.index_for_path("lvl_1"))
    span = panel.tree.model().index(0, 0, level)
    assert not panel.tree.isExpanded(span)
    panel.tree.expand(span)
    view_model = panel.tree.model()
    assert [view_model.index(r, 1, span).data() for r in (0, 6, 24)] == ["1 row", "7 rows", "4 rows"]


def test_details_of_rows_on_screen_are_repainted_as_they_arrive(qtbot, panel, tmp_path):
    changed = open_level(qtbot, panel, tmp_path / "small.zarr", 12)  # under the large limit: rows themselves
    rows_changed = {r for first, last, column in changed if column == 1 for r in range(first, last + 1)}
    assert rows_changed >= set(range(12))
    level = panel.view_index(panel.tree_model.index_for_path("lvl_1"))
    assert panel.tree.model().index(3, 1, level).data() == "4 rows"


def test_a_refresh_expands_again_the_ranges_that_were_expanded(qtbot, panel, tmp_path):
    model = panel.tree_model
    model.large_group = 10
    open_level(qtbot, panel, tmp_path / "big.zarr", 300)  # ranges 0 … 249 and 250 … 299
    view = panel.tree.model()
    level = panel.view_index(model.index_for_path("lvl_1"))
    assert [view.index(r, 0, level).data() for r in range(view.rowCount(level))] == ["0 … 249", "250 … 299"]
    panel.tree.expand(view.index(1, 0, level))
    panel.refresh(model.item(model.index_for_path("lvl_1")))
    qtbot.waitUntil(lambda: model.is_loaded("lvl_1") and not model.is_busy(), timeout=10000)
    level = panel.view_index(model.index_for_path("lvl_1"))
    assert panel.tree.isExpanded(level)
    assert [panel.tree.isExpanded(view.index(r, 0, level)) for r in range(2)] == [False, True]

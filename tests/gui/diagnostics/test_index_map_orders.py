"""Every index-map colouring works in whatever order the user arrives (issue 37 item 2).

Each order is a sequence of what a user does in the real window: open the map (View ▸ Index Map),
wait for the opening validation, press F5 (a fresh validation report after the map is open), run a
recall sweep, choose "boundary items", replay a workload, open another index. After every step the
colour-by choices are exactly the colourings of the registry whose inputs exist for the index shown,
and each of them, chosen in the combo as a user does, colours the map with its own legend; boundary
items start their computation (with progress) when chosen.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import permutations
from pathlib import Path

import pytest
from defect_indexes import build_moved_leaf_index
from window_driver import open_window, run_recall, wait_idle

from ecpfs_viewer.gui.diagnostics.index_map import NO_INDEX
from ecpfs_viewer.gui.window.main_window import MainWindow
from ecpfs_viewer.model.diagnostics.colourings import COLOURINGS, Need
from tests.index_factory import build_clustered_index

CORE = ("map", "validated", "sweep", "boundary")
#: every order of the four (boundary items are chosen on the map, so after it), and orders with a
#: workload, an F5 and another index opened in between
ORDERS = [o for o in permutations(CORE) if o.index("map") < o.index("boundary")] + [
    ("sweep", "workload", "map", "boundary", "validated"),
    ("map", "boundary", "workload", "sweep", "refresh"),
    ("sweep", "other", "map", "boundary", "validated"),
    ("map", "sweep", "boundary", "other", "sweep", "boundary"),
    ("workload", "map", "other", "validated", "boundary", "sweep"),
]


@pytest.fixture(scope="module")
def indexes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    first = build_moved_leaf_index(tmp_path_factory.mktemp("orders_a")).path
    second = build_clustered_index(tmp_path_factory.mktemp("orders_b"), 600, 8, clusters=6, levels=2)
    return first, second


@dataclass
class Inputs:
    """What the user produced for the index shown (another index drops it all)."""

    swept: bool = False
    workload: bool = False


def _expected(win: MainWindow, inputs: Inputs) -> set[str]:
    has = {Need.MAP: True, Need.ON_DEMAND: True, Need.RECALL_SWEEP: inputs.swept, Need.WORKLOAD: inputs.workload,
           Need.SELF_REACHABILITY: False,
           Need.VALIDATION: win.overview.last_report(win.session.hierarchy) is not None}
    return {c.id for c in COLOURINGS if has[c.needs]}


def _choose(qtbot, win: MainWindow, key: str) -> None:
    """Choose a colouring in the combo, as a user does; boundary items start computing at once."""
    panel = win.index_map.panel
    combo = panel.colour_combo
    at = combo.findData(key)
    assert at >= 0, f"{key} not offered: {panel.offered()}"
    computing = key == "boundary" and panel.boundary is None
    if win.index_map.dock.isVisible():
        win.index_map.show_map()  # its tab (or window) brought forward, as the user does to use its combo
    if combo.currentIndex() == at:  # already current (e.g. an earlier computation failed): choose again
        combo.setCurrentIndex(0 if at else 1)
    combo.setCurrentIndex(at)
    if computing:
        assert panel.busy and panel.progress.isVisible(), panel.status.text()
        assert panel.status.text().startswith("Scoring every item")
    qtbot.waitUntil(lambda: not panel.busy, timeout=60_000)
    assert panel.current() == key
    assert panel.legend.overlay is not None and panel.legend.overlay.key == key
    assert panel.view.overlay is panel.legend.overlay
    assert panel.status.text() != NO_INDEX


def _check(qtbot, win: MainWindow, inputs: Inputs) -> None:
    """The choices are exactly the colourings whose inputs exist, and each one works."""
    if not win.index_map.dock.isVisible():
        return
    panel = win.index_map.panel
    qtbot.waitUntil(lambda: panel.index_map is not None and not panel.busy, timeout=30_000)
    offered = {key.split(":")[0] for key in panel.offered()}  # read with the inputs, no event in between
    assert offered == _expected(win, inputs)
    for key in panel.offered():
        _choose(qtbot, win, key)


def _open(qtbot, win: MainWindow, path: Path) -> None:
    before = win.session.hierarchy
    win.open_location(str(path))
    qtbot.waitUntil(lambda: win.session.hierarchy is not None and win.session.hierarchy is not before,
                    timeout=30_000)
    wait_idle(qtbot, win, 30_000)


def _step(qtbot, win: MainWindow, step: str, inputs: Inputs, other: Path) -> None:
    panel = win.index_map.panel
    if step == "map":
        win.index_map.show_action.trigger()
        qtbot.waitUntil(lambda: panel.index_map is not None and not panel.busy, timeout=30_000)
    elif step == "validated":
        qtbot.waitUntil(lambda: win.overview.last_report(win.session.hierarchy) is not None, timeout=30_000)
    elif step == "refresh":  # F5: the store read again, a fresh report arrives with the map open
        win.overview.forget_report()
        win.commands.refresh_action.trigger()
        qtbot.waitUntil(lambda: win.overview.last_report(win.session.hierarchy) is not None, timeout=30_000)
    elif step == "sweep":
        run_recall(qtbot, win, 10, "1, 2")
        inputs.swept = True
        if win.index_map.dock.isVisible():
            qtbot.waitUntil(lambda: panel.miss_map is not None, timeout=10_000)
            assert panel.current() == "misses"  # a sweep's misses are shown at once
    elif step == "boundary":
        qtbot.waitUntil(lambda: not panel.busy, timeout=30_000)
        _choose(qtbot, win, "boundary")
        assert panel.boundary is not None
    elif step == "workload":
        win.diagnostics.workload_action.trigger()
        dialog = win.diagnostics.workload
        dialog.count.setValue(50)
        dialog.run_button.click()
        qtbot.waitUntil(lambda: dialog.workload is not None and not dialog.busy, timeout=30_000)
        dialog.close()
        inputs.workload = True
    elif step == "other":
        _open(qtbot, win, other)
        inputs.swept = inputs.workload = False
        assert panel.miss_map is None and panel.boundary is None
    else:
        raise AssertionError(step)


@pytest.mark.parametrize("order", ORDERS, ids=["-".join(o) for o in ORDERS])
def test_every_colouring_works_in_any_order(qtbot, indexes, order: tuple[str, ...]) -> None:
    first, other = indexes
    win = open_window(qtbot, first, 1280, 900)
    inputs = Inputs()
    for step in order:
        _step(qtbot, win, step, inputs, other)
        _check(qtbot, win, inputs)
    assert win.index_map.dock.isVisible()

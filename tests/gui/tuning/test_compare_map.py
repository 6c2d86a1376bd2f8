"""Compare ▸ Map: both indexes side by side on A's axes, coloured by leaf, the moved items ringed with
their count, panning or zooming one map moves the other, Cancel and Place, and Save PNG writes both."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from index_factory import build_clustered_index
from window_driver import open_window

from ecpfs_viewer.model.build.builder import BuildParams, build_index
from ecpfs_viewer.model.search import IndexReader
from ecpfs_viewer.model.tuning.compare import migration

ITEMS = 400


@pytest.fixture(scope="module")
def two_builds(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    fine = build_clustered_index(tmp_path_factory.mktemp("map_fine"), ITEMS, 6, clusters=4, target_cluster_items=20)
    build_index(fine.parent / "data.npy", fine.parent / "coarse.zarr", BuildParams(levels=2, target_cluster_items=60))
    return fine, fine.parent / "coarse.zarr"


def _ranges(view) -> np.ndarray:  # type: ignore[no-untyped-def]
    return np.asarray(view.getViewBox().viewRange(), np.float64)


def test_the_map_tab_shows_both_linked_with_the_moved_items_ringed(qtbot, two_builds, tmp_path: Path) -> None:
    fine, coarse = two_builds
    win = open_window(qtbot, fine)
    win.open_comparison(str(coarse))
    qtbot.waitUntil(lambda: bool(win.comparisons), timeout=5000)
    view = win.comparisons[-1]
    page = view.pages["Map"]
    assert view.tabs.tabText(view.tabs.count() - 1) == "Map" and page.data is None  # placed only once shown
    qtbot.waitUntil(lambda: view.opened is not None, timeout=30_000)
    view.tabs.setCurrentWidget(page)  # shown: the placement starts in a worker; Cancel drops it, Place starts again
    assert page.controls.busy and page.controls.cancel_button.isEnabled()
    page.controls.cancel_button.click()
    assert not page.controls.busy and page.status.text() == "Cancelled." and page.data is None
    assert page.controls.run_button.isEnabled()
    page.controls.run_button.click()
    qtbot.waitUntil(lambda: page.data is not None and page.view_a.frame is not None and page.view_b.frame is not None
                    and not view.busy, timeout=60_000)
    two = page.data.two
    moved = migration(IndexReader(fine), IndexReader(coarse)).moved_items
    assert two.moved.moved == moved > 0 and (two.moved.only_a, two.moved.only_b) == (0, 0)
    assert page.view_a.frame.total == page.view_b.frame.total == ITEMS  # every item of each in view
    assert page.rings_shown() == (moved, moved)
    assert f"{moved:,} items moved" in page.legend.text() and f"{moved:,} of the {ITEMS:,}" in page.status.text()
    assert "B leaf most of their A leaf went to" in page.legend.text()
    # both maps on one frame: the B view's points are A's axes applied to B's vectors
    assert page.view_b.index.placement.projection is page.view_a.index.placement.projection
    # panning A pans B, zooming B zooms A (the views are linked both ways)
    before = _ranges(page.view_b)
    width = before[0, 1] - before[0, 0]
    assert np.allclose(before, _ranges(page.view_a))
    page.view_a.getViewBox().translateBy(x=width / 4)
    qtbot.waitUntil(lambda: np.allclose(_ranges(page.view_b), _ranges(page.view_a)), timeout=5000)
    assert _ranges(page.view_b)[0, 0] == pytest.approx(before[0, 0] + width / 4, rel=1e-3, abs=1e-6)
    page.view_b.getViewBox().scaleBy((0.5, 0.5))
    qtbot.waitUntil(lambda: np.allclose(_ranges(page.view_a), _ranges(page.view_b)), timeout=5000)
    assert _ranges(page.view_a)[0, 1] - _ranges(page.view_a)[0, 0] == pytest.approx(width / 2, rel=1e-3)
    page.rings_box.setChecked(False)
    assert page.rings_shown() == (0, 0)
    with qtbot.waitSignal(page.exported, timeout=20_000):
        page.export_png(str(tmp_path / "both.png"))
    assert (tmp_path / "both.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    view.close()
    qtbot.waitUntil(lambda: not win.comparisons, timeout=5000)

"""Hostile stores in the window: every panel ends its work with a message, none waits forever."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ecpfs_viewer.gui.app import create_main_window
from ecpfs_viewer.gui.main_window import MainWindow


def _set_shape(store: Path, path: str, shape: list[int]) -> None:
    document_path = store / path / "zarr.json"
    document = json.loads(document_path.read_text())
    document["shape"] = shape
    document_path.write_text(json.dumps(document))


def _opened(qtbot, store: Path) -> MainWindow:
    win = create_main_window(str(store))
    qtbot.addWidget(win)
    win.resize(1280, 800)
    win.show()
    qtbot.waitUntil(lambda: win.location == str(store) and not win.is_busy(), timeout=20_000)
    return win


@pytest.mark.parametrize(("path", "shape"), [("rep_embeddings", [4, -2]), ("index_root/embeddings", [4, -2]),
                                             ("rep_item_ids", [-4]), ("lvl_2/node_2/embeddings", [-3, 2])])
def test_a_negative_dimension_ends_the_summary_and_the_level_page(qtbot, two_clusters_copy: Path, path: str,
                                                                   shape: list[int]) -> None:
    _set_shape(two_clusters_copy, path, shape)
    win = _opened(qtbot, two_clusters_copy)
    win.tabs.setCurrentIndex(win.TAB_OVERVIEW)
    qtbot.waitUntil(lambda: not win.overview.busy, timeout=20_000)
    assert win.overview.status.text() == ""  # not "Reading the index summary …" for ever
    assert "Levels: 2" in win.overview.summary_text()
    report = win.overview.index_page.report
    assert report is not None and any(f"value {min(shape)} is out of range" in f.message for f in report.findings)
    win.reveal_path("lvl_2")
    qtbot.waitUntil(lambda: win.overview.stack.currentWidget() is win.overview.level_page
                    and not win.overview.busy and win.overview.status.text() == "", timeout=20_000)
    assert win.overview.summary_text().startswith("Level: lvl_2")

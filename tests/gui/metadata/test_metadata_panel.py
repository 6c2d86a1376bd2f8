"""The metadata panel: decoded summary, raw document as stored, error banner, chunk map clicks."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import zarr
from locations import PEER_DATA  # tests/ is on sys.path (conftest)

from ecpfs_viewer.gui.metadata.panel import MetadataPanel
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

PEER = PEER_DATA / "generated" / "zarr_python_3.4.2_v2.zarr"


def shown(qtbot, path: Path, node: str) -> MetadataPanel:
    panel = MetadataPanel()
    qtbot.addWidget(panel)
    hierarchy = Hierarchy(open_store(path))
    panel.show_node(hierarchy, node)
    qtbot.waitUntil(lambda: not panel.is_busy(), timeout=5000)
    return panel


def test_raw_document_pretty_and_exactly_as_stored(qtbot, two_clusters_path):
    panel = shown(qtbot, two_clusters_path, "info/metric")
    stored = (two_clusters_path / "info/metric/zarr.json").read_text()
    assert panel.raw.toPlainText() == json.dumps(json.loads(stored), indent=2, ensure_ascii=False)
    panel.pretty.setChecked(False)
    assert panel.raw.toPlainText() == stored
    text = panel.summary.toPlainText()
    assert "Data type\nstring" in text and "vlen-utf8" in text and "Shape\nscalar" in text
    assert panel.tabs.currentIndex() == 0  # arrays open on the chunk map


def test_v2_array_names_its_document(qtbot):
    array = next(p.parent for p in PEER.rglob(".zarray"))
    node = array.relative_to(PEER).as_posix()
    panel = shown(qtbot, PEER, node)
    assert panel.tabs.tabText(1) == ".zarray"
    assert "Zarr format\n2" in panel.summary.toPlainText()


def test_error_node_message_in_the_banner(qtbot, two_clusters_copy):
    (two_clusters_copy / "index_root" / "zarr.json").write_text("[1, 2]")
    panel = shown(qtbot, two_clusters_copy, "index_root")
    assert not panel.banner.isHidden()
    assert "index_root/zarr.json" in panel.banner.text.text()


def test_clicked_chunk_asks_for_its_rows(qtbot, tmp_path):
    zarr.create_array(tmp_path / "c.zarr", name="a", data=np.zeros((10, 2), dtype="f4") + 1, chunks=(3, 2))
    panel = shown(qtbot, tmp_path / "c.zarr", "a")
    assert panel.chunk_map.cell_count() == 4
    assert "Stored size" in panel.summary.toPlainText() and "4 stored, 0 missing" in panel.summary.toPlainText()
    with qtbot.waitSignal(panel.chunk_preview_requested) as signal:
        panel.chunk_map.chunk_clicked.emit((3, 0))
    path, text = signal.args
    assert path == "a" and text.replace(" ", "").startswith("9:10")


def test_a_document_nested_too_deeply_is_shown_as_stored_with_the_reason(qtbot, two_clusters_copy):
    """Found by the monkey test: pretty-printing it raised RecursionError on the GUI thread."""
    document = two_clusters_copy / "rep_item_ids" / "zarr.json"
    stored = document.read_text().replace('"attributes": {', '"attributes": {"deep": ' + "[" * 100_000
                                          + "]" * 100_000 + ", ", 1)
    document.write_text(stored)
    panel = shown(qtbot, two_clusters_copy, "rep_item_ids")
    assert panel.pretty.isChecked() and panel.raw.toPlainText() == stored
    assert "nested 100,002 levels deep, more than the 128 cap" in panel.banner.text.text()

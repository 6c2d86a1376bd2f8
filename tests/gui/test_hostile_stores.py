"""Hostile stores in the window: every panel ends its work with a message, none waits forever, and
memory stays bounded whatever the metadata declares."""

from __future__ import annotations

import contextlib
import json
import re
import resource
from collections.abc import Iterator
from pathlib import Path

import pytest
from hostile_builders import giant_shard_index, tiny_chunk_grid  # tests/ is on sys.path (conftest)

from ecpfs_viewer.gui.app import create_main_window
from ecpfs_viewer.gui.window.main_window import MainWindow


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
    qtbot.waitUntil(lambda: win.session.location == str(store) and not win.is_busy(), timeout=20_000)
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


def _peak_resident_mb() -> float:
    """The process's peak resident memory since the last reset_peak_resident()."""
    status = Path("/proc/self/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+)", status).group(1)) / 1024  # type: ignore[union-attr]


def _reset_peak_resident() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # Linux: VmHWM starts again from the current size


@contextlib.contextmanager
def _address_space_limited(extra_mb: int) -> Iterator[None]:
    """RLIMIT_AS (soft) at the process's current address space plus extra_mb while the block runs: a
    regression ends in a MemoryError the window shows, not in a machine out of memory."""
    size_kb = int(re.search(r"VmSize:\s+(\d+)", Path("/proc/self/status").read_text()).group(1))  # type: ignore[union-attr]
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, ((size_kb << 10) + (extra_mb << 20), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux /proc to measure peak memory")
@pytest.mark.parametrize("hostile", ["giant-shard-index", "tiny-chunk-grid"])
def test_background_validation_of_a_declared_giant_grid_ends_in_bounded_memory(
        qtbot, two_clusters_copy: Path, hostile: str) -> None:
    if hostile == "giant-shard-index":
        giant_shard_index(two_clusters_copy)  # 4 GiB of shard index declared: validation grew to 7.3 GB
        message = "declares 4.0 GiB of index"
    else:
        tiny_chunk_grid(two_clusters_copy, 50_000)
        message = "named pipe (FIFO)"
    _reset_peak_resident()
    before = _peak_resident_mb()
    with _address_space_limited(1024):
        win = _opened(qtbot, two_clusters_copy)
        win.tabs.setCurrentIndex(win.TAB_OVERVIEW)
        qtbot.waitUntil(lambda: win.overview.index_page.report is not None and not win.overview.busy,
                        timeout=60_000)
        win.reveal_path("rep_embeddings")  # the user looks at the array itself
        qtbot.waitUntil(lambda: "Cannot show rep_embeddings" in win.plot.message_text()
                        or win.plot.current_data() is not None, timeout=60_000)
    report = win.overview.index_page.report
    assert any(f.path == "rep_embeddings" and message in f.message for f in report.findings), report.findings
    assert message in win.plot.message_text()
    assert _peak_resident_mb() - before < 400

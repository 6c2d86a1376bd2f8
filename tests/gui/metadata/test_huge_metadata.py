"""A document too large to show at once: the panel shows its start and its size, never waits on
the whole on the GUI thread, and loads the rest (in the background) when asked. See
docs/reliability.md."""

from __future__ import annotations

import json
from pathlib import Path

from command_runs import run_window_measured  # tests/ is on sys.path (conftest)
from hostile_builders import bulky_attribute, empty_lists
from PySide6.QtCore import Qt
from window_driver import open_window, select

from ecpfs_viewer.gui.metadata.document_text import DISPLAYED_LINE_CHARS, SHOWN_CHARS
from ecpfs_viewer.gui.metadata.panel import MetadataPanel
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

ARRAY = "lvl_2/node_0/embeddings"


def _long_string(store: Path, characters: int) -> int:
    return bulky_attribute(store, ARRAY, json.dumps("x" * characters).encode())


def test_selecting_an_array_with_a_50_mb_attribute_shows_it_cut_with_its_size(qtbot, two_clusters_copy):
    size = _long_string(two_clusters_copy, 50_000_000)
    win = open_window(qtbot, two_clusters_copy)
    select(qtbot, win, ARRAY)  # waits, bounded, for the window to be idle
    panel = win.metadata
    qtbot.waitUntil(lambda: panel._content is not None, timeout=10_000)
    summary = panel.summary.toPlainText()
    assert "Attribute bulk" in summary and "(47.7 MiB in all)" in summary
    assert len(summary) < 10_000
    text = panel.raw.toPlainText()
    assert 0 < len(text) <= SHOWN_CHARS and text.startswith("{")
    assert not panel.cut_row.isHidden() and panel.show_all.isEnabled()
    assert panel.cut_note.text() == (f"Shown: the first {SHOWN_CHARS:,} characters of a document of 47.7 MiB "
                                     f"({size:,} bytes). The rest is not shown.")
    assert "Could not" not in summary and not panel.banner.isVisibleTo(panel)


def test_the_window_selecting_it_from_the_command_line_ends_in_bounded_memory(two_clusters_copy, tmp_path):
    """The issue's row: `--select` of that array never finished (a 50 MB line laid out and coloured)."""
    _long_string(two_clusters_copy, 50_000_000)
    shot = tmp_path / "shot.png"
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "ECPFS_VIEWER_CACHE": str(tmp_path / "cache")}
    done, peak_mb = run_window_measured(str(two_clusters_copy), "--select", ARRAY, "--screenshot", str(shot),
                                        env=env)
    assert done.returncode == 0, done.stderr
    assert shot.is_file()
    assert "Traceback" not in done.stderr and "Warning" not in done.stderr, done.stderr
    assert peak_mb < 600


def test_show_all_loads_the_whole_document_on_request(qtbot, two_clusters_copy):
    _long_string(two_clusters_copy, 3_000_000)
    stored = (two_clusters_copy / ARRAY / "zarr.json").read_text()
    panel = MetadataPanel()
    qtbot.addWidget(panel)
    panel.show_node(Hierarchy(open_store(two_clusters_copy)), ARRAY)
    qtbot.waitUntil(lambda: not panel.is_busy(), timeout=10_000)
    panel.pretty.setChecked(False)
    assert panel.raw.toPlainText() == stored[:SHOWN_CHARS]
    qtbot.mouseClick(panel.show_all, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not panel.is_busy() and not panel.show_all.isEnabled()
                    and panel.raw.document().characterCount() > SHOWN_CHARS, timeout=10_000)
    shown = panel.raw.toPlainText()
    assert shown.replace("\n", "") == stored.replace("\n", "")
    assert max(len(line) for line in shown.split("\n")) == DISPLAYED_LINE_CHARS
    assert panel.cut_note.text() == (f"The whole document: {len(shown):,} characters; not coloured; lines longer "
                                     f"than {DISPLAYED_LINE_CHARS:,} characters broken for display.")
    panel.pretty.setChecked(True)  # the other view is cut again until asked for
    assert len(panel.raw.toPlainText()) == SHOWN_CHARS and panel.show_all.isEnabled()


def test_a_document_past_the_value_cap_is_said_unread_never_without_attributes(qtbot, two_clusters_copy):
    bulky_attribute(two_clusters_copy, ARRAY, empty_lists(2_000_000))
    panel = MetadataPanel()
    qtbot.addWidget(panel)
    panel.show_node(Hierarchy(open_store(two_clusters_copy)), ARRAY)
    qtbot.waitUntil(lambda: not panel.is_busy(), timeout=10_000)
    assert panel.banner.text.text() == (f"{ARRAY}/zarr.json: 2,000,030 JSON values, more than the 1,000,000 cap "
                                        "(ECPFS_VIEWER_MAX_JSON_VALUES) on values in one document; could not be read")
    summary = panel.summary.toPlainText()
    assert "Attributes\ncould not be read" in summary and "none" not in summary
    assert len(panel.raw.toPlainText()) == SHOWN_CHARS  # the stored text, cut

"""The index page's findings filter: -CODE hides a code, the count of what it hides is shown,
and the filter is remembered."""

from __future__ import annotations

import shutil
from pathlib import Path

from ecpfs_viewer.gui.overview.panel import IndexOverviewPanel
from ecpfs_viewer.gui.widgets.findings_filter import FindingsFilterBar
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


def wait_idle(qtbot, panel: IndexOverviewPanel) -> None:
    qtbot.waitUntil(lambda: not panel.busy, timeout=20000)


def _damaged(copy: Path) -> Path:
    shutil.rmtree(copy / "lvl_2" / "node_1" / "item_ids")
    return copy


def test_hiding_a_code_hides_its_rows_and_says_how_many(qtbot, overview_panel: IndexOverviewPanel,
                                                          two_clusters_copy: Path) -> None:
    panel = overview_panel
    panel.show_index(Hierarchy(open_store(_damaged(two_clusters_copy))))
    wait_idle(qtbot, panel)
    page = panel.index_page
    codes = page.findings.row_codes()
    assert "ECPFS-E041" in codes
    bar = page.findings_filter
    bar.field.setText("-e041")
    assert "ECPFS-E041" not in page.findings.row_codes()
    assert bar.note.isVisibleTo(page) and bar.note.text().startswith(f"{len(codes) - codes.count('ECPFS-E041')} of ")
    bar.field.setText("-E999")
    assert "not a finding code: E999" in bar.note.text()
    assert page.findings.row_codes() == codes
    bar.field.setText("")
    assert page.findings.row_codes() == codes and not bar.note.isVisibleTo(page)


def test_the_filter_is_remembered_and_applies_to_the_next_report(qtbot, overview_panel: IndexOverviewPanel,
                                                                 two_clusters_copy: Path) -> None:
    panel = overview_panel
    panel.index_page.findings_filter.field.setText("-E041")
    panel.show_index(Hierarchy(open_store(_damaged(two_clusters_copy))))
    wait_idle(qtbot, panel)
    assert "ECPFS-E041" not in panel.index_page.findings.row_codes()
    assert "of" in panel.index_page.findings_filter.note.text()
    again = FindingsFilterBar(panel.index_page.findings)
    qtbot.addWidget(again)
    assert again.field.text() == "-E041"

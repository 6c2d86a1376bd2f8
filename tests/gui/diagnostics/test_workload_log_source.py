"""Query Workload's fourth source: the searches an ecpfs JSONL log recorded (tests/data/search_logs),
read in the background; a log below trace level is refused in the dialog with what it lacks."""

from __future__ import annotations

from pathlib import Path

from ecpfs_viewer.gui.diagnostics.workload_view import LOG_SOURCE, WorkloadDialog
from ecpfs_viewer.model.search import IndexReader

LOGS = Path(__file__).resolve().parents[2] / "data" / "search_logs"


def test_the_workload_dialog_reads_a_search_log(qtbot, two_clusters_path: Path) -> None:  # type: ignore[no-untyped-def]
    dialog = WorkloadDialog(lambda: IndexReader(two_clusters_path))
    qtbot.addWidget(dialog)
    dialog.show()
    assert not dialog.log.isEnabled()
    dialog.source.setCurrentIndex(LOG_SOURCE)
    assert dialog.log.isEnabled() and not dialog.search_exp.isEnabled()
    dialog.run_button.click()
    assert "Choose an ecpfs search log" in dialog.summary.text()
    dialog.log.setText(str(LOGS / "v0.10-trace.jsonl"))
    dialog.run_button.click()
    qtbot.waitUntil(lambda: dialog.workload is not None, timeout=20_000)
    assert dialog.workload.queries == 2
    assert "search log v0.10-trace.jsonl" in dialog.summary.text()
    assert "node visits by source: disk 6, cache 1" in dialog.summary.text()

    dialog.log.setText(str(LOGS / "v0.10-info.jsonl"))
    dialog.run_button.click()
    qtbot.waitUntil(dialog.run_button.isEnabled, timeout=20_000)
    assert "not the nodes they visited" in dialog.summary.text()

"""Export CSV of a recall sweep as a user meets it: the numbers, and the misses in a second file the
save dialog names."""

from __future__ import annotations

import csv
from pathlib import Path

from index_factory import build_clustered_index
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog
from window_driver import open_window, run_recall

from ecpfs_viewer.model.search.explore import misses_csv_path


def test_misses_go_beside_the_numbers():
    assert misses_csv_path("/tmp/recall.csv") == "/tmp/recall-misses.csv"
    assert misses_csv_path("/tmp/sweep") == "/tmp/sweep-misses.csv"


def test_export_csv_writes_the_misses_the_table_shows(qtbot, tmp_path, monkeypatch):
    win = open_window(qtbot, build_clustered_index(tmp_path, 2000, 8))
    recall = run_recall(qtbot, win, 12, "1, 2")
    outcome = recall.outcome
    assert outcome is not None and 0 < outcome.missed_total == len(outcome.misses)

    asked: list[str] = []
    target = tmp_path / "sweep.csv"

    def save_as(_parent, caption, *_args, **_kwargs):
        asked.append(caption)
        return str(target), "CSV file (*.csv)"

    monkeypatch.setattr(QFileDialog, "getSaveFileName", save_as)
    assert "misses" in recall.csv_button.toolTip()
    qtbot.mouseClick(recall.csv_button, Qt.MouseButton.LeftButton)
    assert "-misses.csv" in asked[0]  # the dialog says where the misses go
    misses_file = tmp_path / "sweep-misses.csv"
    assert recall.status.text() == f"Saved {target} and {misses_file}"

    numbers = list(csv.reader(target.open()))
    assert [row[0] for row in numbers] == ["search_exp", "1", "2"]
    rows = list(csv.DictReader(misses_file.open()))
    assert len(rows) == outcome.missed_total
    recall.miss_filter.setCurrentIndex(0)  # every search_exp, as the file holds them
    shown = recall.misses_model.texts()
    assert [(r["search_exp"], r["query"], r["exact_rank"], r["item_id"], r["leaf"], r["row"], r["why"])
            for r in rows] == [(s[0], s[1], s[2], s[3], s[5], s[6], s[7]) for s in shown]
    assert {r["reason"] for r in rows} <= {"not reached", "unreachable", "outranked"}
    reached_not = [r for r in rows if r["reason"] == "not reached"]
    assert reached_not and all(r["left_at"].startswith("lvl_") and r["rank"] and r["siblings"] for r in reached_not)
    assert Path(misses_file).read_text().count("\n") == outcome.missed_total + 1
    win.close()

"""`workload --log`: ecpfs's own JSONL search logs as the workload source (format document §12), both
field names (`leaves_scanned` before 0.9.99, `leaf_nodes_scanned` since), visits from trace lines
(lvl counted from 0 for lvl_1); a log that lacks the visited nodes is refused with what it lacks.
The logs in tests/data/search_logs are handwritten after upstream's log lines for two_clusters."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from jsonschema import Draft202012Validator

from ecpfs_viewer.cli import main
from ecpfs_viewer.cli.schema import load_schema
from ecpfs_viewer.model.diagnostics.search_log import SearchLogError, read_search_log, workload_from_log
from ecpfs_viewer.model.search import IndexReader

LOGS = Path(__file__).resolve().parents[2] / "data" / "search_logs"


def _visits(work, level: int) -> dict[int, int]:  # type: ignore[no-untyped-def]
    lv = work.levels[level - 1]
    return {int(n): int(v) for n, v in zip(lv.node_ids, lv.visits, strict=True)}


@pytest.mark.parametrize("name, field", [("v0.9.98-trace.jsonl", "leaves_scanned"),
                                         ("v0.10-trace.jsonl", "leaf_nodes_scanned")])
def test_a_trace_log_of_either_version_is_the_workload(two_clusters_path: Path, name: str, field: str) -> None:
    work = workload_from_log(IndexReader(two_clusters_path), LOGS / name)
    assert work.queries == 2 and work.params.k == 3 and work.params.search_exp == 2
    assert _visits(work, 1) == {0: 1, 1: 2}
    assert _visits(work, 2) == {0: 1, 1: 1, 2: 1, 3: 1}
    assert work.leaves_per_query.tolist() == [2, 2] and work.nodes_per_query.tolist() == [4, 3]
    assert any(field in note and "2 searches" in note and "7 node visits" in note for note in work.notes)
    assert work.source == f"search log {name}"


def test_the_newer_logs_node_cache_or_disk_is_tallied(two_clusters_path: Path) -> None:
    work = workload_from_log(IndexReader(two_clusters_path), LOGS / "v0.10-trace.jsonl")
    assert "node visits by source: disk 6, cache 1" in work.notes
    old = workload_from_log(IndexReader(two_clusters_path), LOGS / "v0.9.98-trace.jsonl")
    assert not any("by source" in note for note in old.notes)


def test_a_log_without_trace_lines_says_what_it_lacks(two_clusters_path: Path) -> None:
    log = read_search_log(LOGS / "v0.10-info.jsonl")
    assert log.searches == {0: 2, 1: 2} and not log.visits
    with pytest.raises(SearchLogError, match=r"2 searches with their leaf counts but not the nodes they visited.*"
                                             r"--log-level trace"):
        workload_from_log(IndexReader(two_clusters_path), LOGS / "v0.10-info.jsonl")
    with pytest.raises(SearchLogError, match=r"records no searches.*--with-logging JSONL log"):
        workload_from_log(IndexReader(two_clusters_path), LOGS / "not-a-log.jsonl")


def test_visits_to_nodes_the_index_lacks_and_bad_lines_are_noted(two_clusters_path: Path, tmp_path: Path) -> None:
    text = (LOGS / "v0.10-trace.jsonl").read_text()
    extra = ('{"level":"TRACE","message":"visiting node lvl=1 node=99 is_leaf=1"}\n' "not json\n"
             '{"level":"INFO","message":"search: query_id=2 k=3 leaf_nodes_scanned=1 items_returned=2"}\n'
             + '{"level":"TRACE","message":"' + "x" * 70_000 + '"}\n')
    (tmp_path / "log.jsonl").write_text(text + extra)
    work = workload_from_log(IndexReader(two_clusters_path), tmp_path / "log.jsonl")
    assert work.queries == 3 and work.leaves_per_query.tolist() == [2, 2, 1]
    assert any("1 of 8 visits name nodes this index does not store" in n for n in work.notes)
    assert any("2 of" in n and "lines skipped" in n for n in work.notes)
    assert int(np.sum(work.levels[1].visits)) == 4


def test_cli_workload_log(two_clusters_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["workload", str(two_clusters_path), "--log", str(LOGS / "v0.9.98-trace.jsonl"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert not list(Draft202012Validator(load_schema("workload")).iter_errors(data))
    assert data["queries"] == 2 and data["source"] == "search log v0.9.98-trace.jsonl"
    assert main(["workload", str(two_clusters_path), "--log", str(LOGS / "v0.10-trace.jsonl"), "--quiet"]) == 0
    assert "note: node visits by source" in capsys.readouterr().out
    assert main(["workload", str(two_clusters_path), "--log", str(LOGS / "v0.10-info.jsonl")]) == 1
    assert "not the nodes they visited" in capsys.readouterr().err
    assert main(["workload", str(two_clusters_path), "--log", str(LOGS / "absent.jsonl")]) == 2

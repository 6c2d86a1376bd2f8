"""`ecpfs-viewer search` / `recall` / `locate` on a terminal: results as text and JSON, every bad
input one clear line (exit 2 for a usage error or what cannot be opened, 1 for unusable data), the
same answers over a folder, a zip and HTTP."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ecpfs_viewer.cli import main
from ecpfs_viewer.model.search import IndexReader
from tests.npy_headers import write_lying_npy


@pytest.fixture
def work(tmp_path: Path, two_clusters_path: Path) -> Path:
    """A folder with good.npy: the 8 two-cluster points of the upstream fixture, in item order."""
    reader = IndexReader(two_clusters_path)
    np.save(tmp_path / "good.npy", reader.vectors_for_items(reader.locator.all_item_ids()))
    return tmp_path


def _build(work: Path) -> str:
    assert main(["build", str(work / "good.npy"), str(work / "out.zarr"), "--levels", "2",
                 "--target-cluster-items", "2", "--quiet"]) == 0
    return str(work / "out.zarr")


def _ids(out: str) -> list[str]:
    return [line.split("\t")[0] for line in out.strip().splitlines() if not line.startswith("#")]


def test_build_then_search(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    idx = _build(work)
    capsys.readouterr()
    assert main(["search", idx, "--item", "0", "--k", "8"]) == 0
    assert _ids(capsys.readouterr().out) == [str(i) for i in range(8)]
    assert main(["search", idx, "--query-row", "5", "--query-file", str(work / "good.npy"), "--k", "2",
                 "--exclude", "5"]) == 0
    out = capsys.readouterr().out
    assert _ids(out) == ["4", "6"]
    cost_line = next(line for line in out.splitlines() if line.startswith("# cost: "))
    assert "distance computations" in cost_line and "leaves scanned" in cost_line and " ms" in cost_line
    assert "# read per level (bytes/requests): index_root 0 B/0, lvl_1 " in out
    assert main(["search", idx, "--recall", "8", "--k", "2", "--search-exp", "4"]) == 0
    assert capsys.readouterr().out.startswith("recall@2\t1.0000")


def test_search_bad_input(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", str(work / "nope.zarr"), "--item", "1"]) == 2
    assert "nope.zarr: no such file or directory" in capsys.readouterr().err
    idx = _build(work)
    capsys.readouterr()
    assert main(["search", idx, "--item", "99"]) == 1
    assert "item 99 is not in any leaf" in capsys.readouterr().err
    assert main(["search", idx, "--query-row", "20", "--query-file", str(work / "good.npy")]) == 1
    assert "outside" in capsys.readouterr().err
    assert main(["search", idx, "--item", "1", "--exclude", "a,b"]) == 2
    assert "--exclude" in capsys.readouterr().err
    assert main(["search", idx]) == 2
    np.save(work / "q3.npy", np.zeros((2, 3), np.float32))
    assert main(["search", idx, "--query-row", "0", "--query-file", str(work / "q3.npy")]) == 1
    assert "3 dimensions" in capsys.readouterr().err


@pytest.mark.parametrize(("args", "message", "code"), [
    (["--item", "1", "--k", "0"], "--k must be at least 1", 2),
    (["--item", "1", "--search-exp", "-1"], "--search-exp must be at least 0", 2),
    (["--item", "1", "--max-increments", "-2"], "--max-increments must be at least -1", 2),
    (["--query-file", "nan.npy"], "NaN or Inf", 1),
    (["--query-file", "inf.npy"], "NaN or Inf", 1),
    (["--query-file", "missing.npy"], "file not found", 2),
    (["--saved-query", "3"], "saved query 3 not found", 1),
])
def test_search_rejects_bad_arguments_in_one_line(work: Path, capsys: pytest.CaptureFixture[str],
                                                  args: list[str], message: str, code: int) -> None:
    idx = _build(work)
    np.save(work / "nan.npy", np.array([[np.nan, 0]], np.float32))
    np.save(work / "inf.npy", np.array([[1e300, 0]], np.float64))  # finite, but not in float32
    capsys.readouterr()
    assert main(["search", idx, *[str(work / a) if a.endswith(".npy") else a for a in args]]) == code
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("shape", [(-1, 64), (-5, 64)])
def test_a_query_file_with_a_negative_shape_is_one_sentence(work: Path, capsys: pytest.CaptureFixture[str],
                                                            shape: tuple[int, int]) -> None:
    """Issue 34: was `OverflowError: memory mapped length must be positive`, no file named."""
    idx = _build(work)
    path = write_lying_npy(work / "q.npy", shape)
    capsys.readouterr()
    assert main(["search", idx, "--query-file", str(path)]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"ecpfs-viewer: error: {path}: the header declares shape {shape}; a shape cannot be negative"]


def test_search_json_trace_and_explain(two_clusters_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", str(two_clusters_path), "--item", "0", "--k", "3", "--search-exp", "1",
                 "--max-increments", "0", "--json", "--explain"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [h["item_id"] for h in report["items"]] == [0, 1]  # one leaf of two items visited
    assert report["items"][0] == {"item_id": 0, "score": 0.0, "leaf": 0, "row": 0}
    assert report["leaves_visited"] == 1
    trace = [(v["level"], v["node_id"], v["rank"], v["siblings"]) for v in report["trace"]]
    assert trace == [(1, 0, 1, 2), (2, 0, 1, 1)]
    assert [h["item_id"] for h in report["exact"]] == [0, 1, 2]
    (missed,) = report["missed"]
    assert missed["item_id"] == 2 and missed["reason"] == "not reached"
    assert missed["text"] == ("item 2 is in lvl_2/node_1 under lvl_1/node_1 (rank 2 of 2 under index_root); "
                              "the search stopped after 1 leaf, before reaching it")


def test_search_text_explain_and_trace(two_clusters_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", str(two_clusters_path), "--item", "0", "--k", "3", "--search-exp", "1",
                 "--max-increments", "0", "--explain", "--trace"]) == 0
    captured = capsys.readouterr()
    assert _ids(captured.out) == ["0", "1"]
    assert "# exact top-3: 2 of 3 found" in captured.out
    assert "# item 2 is in lvl_2/node_1 under lvl_1/node_1 (rank 2 of 2 under index_root)" in captured.out
    assert "# lvl_1/node_0" in captured.err and "rank 1/2" in captured.err


def test_locate(two_clusters_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["locate", str(two_clusters_path), "5"]) == 0
    assert capsys.readouterr().out.strip() == (
        "item 5 is in lvl_2/node_2, row 1; path: index_root row 1 > lvl_1/node_1 > lvl_2/node_2")
    assert main(["locate", str(two_clusters_path), "5", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert (found["leaf"], found["row"], found["complete"]) == (2, 1, True)
    assert found["path"] == [{"level": 1, "node_id": 1, "row": 1}, {"level": 2, "node_id": 2, "row": 1}]
    assert main(["locate", str(two_clusters_path), "42"]) == 1
    assert capsys.readouterr().err.strip() == "ecpfs-viewer: error: item 42 is not in this index"


def test_recall_table_and_json(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    idx = _build(work)
    capsys.readouterr()
    assert main(["recall", idx, "--sample", "8", "--k", "2", "--search-exp", "1,4", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["schema_version"] == 1 and report["miss_map"] is None
    rows = report["rows"]
    assert [r["search_exp"] for r in rows] == [1, 4]
    costs = {f"{name}_{stat}" for name in ("distance_computations", "nodes_visited", "bytes", "requests")
             for stat in ("mean", "p95")}
    assert set(rows[0]) == {"search_exp", "recall", "leaves_mean", "leaves_p95", "ms_mean", "ms_p95",
                            "queries"} | costs
    assert rows[1]["recall"] == 1.0 and rows[1]["queries"] == 8 and rows[1]["leaves_mean"] == 4.0
    # search_exp 4 opens every node: the lvl_1 nodes (index_root's rows), their 4 leaf representatives and
    # the 8 items of the 4 leaves
    lvl_1_nodes = len(IndexReader(idx).root.ids)
    assert rows[1]["distance_computations_mean"] == rows[1]["distance_computations_p95"] == lvl_1_nodes + 4 + 8
    assert rows[1]["nodes_visited_mean"] == lvl_1_nodes + 4
    # cold figures: index_root and every node visited, however much the sampling had cached
    assert 0 < rows[0]["bytes_mean"] < rows[1]["bytes_mean"] == rows[1]["bytes_p95"]
    assert 0 < rows[0]["requests_mean"] < rows[1]["requests_mean"]
    assert rows[0]["recall"] <= rows[1]["recall"]
    assert main(["recall", idx, "--queries", str(work / "good.npy"), "--k", "2", "--search-exp", "4"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["search_exp", "recall@2", "leaves", "mean", "leaves", "p95", "ms",
                                           "mean", "ms", "p95", "dist", "mean", "dist", "p95", "nodes", "mean",
                                           "nodes", "p95", "bytes", "mean", "bytes", "p95", "requests", "mean",
                                           "requests", "p95"]
    assert out.splitlines()[1].split()[:2] == ["4", "1.0000"]
    assert "(8 queries: " in out


def test_recall_self_exclusion_switch(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    idx = _build(work)
    capsys.readouterr()
    # k=1 with the query item kept: every query finds itself, so recall is 1 even on one leaf
    assert main(["recall", idx, "--sample", "8", "--k", "1", "--search-exp", "1", "--max-increments", "0",
                 "--include-self", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"][0]["recall"] == 1.0
    assert main(["recall", idx, "--sample", "8", "--k", "1", "--search-exp", "1", "--max-increments", "0"]) == 0
    assert "each query item left out of its lists" in capsys.readouterr().out


@pytest.mark.parametrize(("args", "message"), [
    (["--search-exp", "1,x"], "--search-exp must be comma-separated integers"),
    (["--search-exp", "-1"], "--search-exp values must be at least 0"),
    (["--k", "0"], "--k must be at least 1"),
    (["--sample", "0"], "--sample must be at least 1"),
])
def test_recall_bad_arguments(work: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    idx = _build(work)
    capsys.readouterr()
    assert main(["recall", idx, *args]) == 2  # usage errors
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_same_answers_over_zip_and_http(two_clusters_path: Path, tmp_path: Path, http_data_url: str,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    archive = shutil.make_archive(str(tmp_path / "tc"), "zip", two_clusters_path)
    commands = (["search", "--item", "6", "--k", "5", "--json", "--explain"], ["locate", "6", "--json"],
                ["recall", "--sample", "4", "--k", "2", "--search-exp", "1,2", "--json"])
    answers = []
    for location in (str(two_clusters_path), archive, f"{http_data_url}/two_clusters.zarr"):
        found = []
        for command, *rest in commands:
            assert main([command, location, *rest]) == 0
            found.append(json.loads(capsys.readouterr().out))
        for row in found[2]["rows"]:  # timings differ from run to run
            del row["ms_mean"], row["ms_p95"]
        answers.append(found)
    assert answers[0][0]["items"][0] == {"item_id": 6, "score": 0.0, "leaf": 3, "row": 0}
    assert answers[1] == answers[0]  # a zip's members are the folder's files: the same bytes and requests
    assert answers[2][0]["cost"]["total_cold_bytes"] > 0
    for found in answers:  # what a web server sends differs (its documents, no listings)
        for key in ("bytes_read", "requests", "total_bytes", "total_requests", "cold_bytes", "cold_requests",
                    "total_cold_bytes", "total_cold_requests"):
            del found[0]["cost"][key]
        for row in found[2]["rows"]:
            for key in ("bytes_mean", "bytes_p95", "requests_mean", "requests_p95"):
                del row[key]
    assert answers[2] == answers[0]


def test_search_item_starts_without_qt(two_clusters_path: Path) -> None:
    code = ("import sys; from ecpfs_viewer.cli import main; rc = main(['search', sys.argv[1], '--item', '5']); "
            "assert not any(m.startswith(('PySide6', 'pyqtgraph')) for m in sys.modules), 'Qt imported'; "
            "sys.exit(rc)")
    done = subprocess.run([sys.executable, "-c", code, str(two_clusters_path)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "5\t0"

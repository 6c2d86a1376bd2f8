"""`workload` and `check --deep` on real indexes: the same answers on a folder, a zip and over HTTP,
saved queries, the stray items of a leaf moved by hand, and usage errors in one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import zarr
from defect_indexes import move_leaf

from ecpfs_viewer.cli import main
from ecpfs_viewer.model.diagnostics.workload import replay
from ecpfs_viewer.model.search import IndexReader, SearchParams, sample_items
from tests.index_factory import build_clustered_index


def test_workload_same_on_folder_zip_and_http(two_clusters_path: Path, tmp_path: Path, http_data_url: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    archive = shutil.make_archive(str(tmp_path / "tc"), "zip", two_clusters_path)
    answers = []
    for location in (str(two_clusters_path), archive, f"{http_data_url}/two_clusters.zarr"):
        assert main(["workload", location, "--sample", "6", "--search-exp", "1", "--k", "2", "--json"]) == 0
        answers.append(json.loads(capsys.readouterr().out))
    assert answers[0] == answers[1] == answers[2]
    index = IndexReader(two_clusters_path)
    direct = replay(index, sample_items(index, 6), SearchParams(k=2, search_exp=1))
    assert answers[0]["leaves_per_query"]["mean"] == pytest.approx(float(direct.leaves_per_query.mean()))
    assert answers[0]["hot_leaves"] == direct.hot_leaves()


def test_workload_text_from_a_query_file_and_saved_queries(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    path = build_clustered_index(tmp_path, 600, 8, clusters=6, levels=2, target_cluster_items=20)
    np.save(tmp_path / "q.npy", np.load(tmp_path / "data.npy")[:40])
    assert main(["workload", str(path), "--queries", str(tmp_path / "q.npy")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("40 queries (")
    assert "hot leaves" in out and "top 1% share" in out
    group = zarr.open_group(str(path), mode="r+")
    saved = group.require_group("queries").require_group("7")
    saved.create_array("query", data=np.load(tmp_path / "data.npy")[3])
    assert main(["workload", str(path), "--saved", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["queries"] == 1 and answer["source"] == "saved query 7"


@pytest.mark.parametrize(("args", "message"), [
    (["--sample", "0"], "--sample must be at least 1"),
    (["--sample", "3", "--search-exp", "0"], "--search-exp must be at least 1"),
    ([], "one of the arguments --queries --sample --saved --log is required"),
])
def test_workload_usage_errors(two_clusters_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                               message: str) -> None:
    assert main(["workload", str(two_clusters_path), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_check_deep_names_the_moved_leaf(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = build_clustered_index(tmp_path, 1500, 12, clusters=10, levels=3, target_cluster_items=20)
    leaf, items, level = move_leaf(path)
    assert main(["check", str(path), "--deep", "--json"]) == 0  # strays are warnings, not errors
    findings = json.loads(capsys.readouterr().out)["findings"]
    index_wide = [f for f in findings if f["message"].startswith("self-reachability:")]
    assert len(index_wide) == 1 and index_wide[0]["severity"] == "warning"
    assert "do not reach their own leaf with search_exp 1" in index_wide[0]["message"]
    assert f"leave their branch at lvl_{level}" in index_wide[0]["message"]
    on_leaf = [f for f in findings if f["path"] == f"lvl_3/node_{leaf}"]
    assert on_leaf and f"items {items[0]}" in on_leaf[0]["message"]
    assert main(["check", str(path)]) == 0
    assert "self-reachability" not in capsys.readouterr().out

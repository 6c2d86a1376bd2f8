"""`ecpfs-viewer compare`: real builds compared, as JSON and text, on a folder, a zip and over http."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from index_factory import build_clustered_index

from ecpfs_viewer.cli import main
from ecpfs_viewer.model.search import IndexReader
from ecpfs_viewer.model.tuning.migration import compare_assignments


@pytest.fixture(scope="module")
def two_builds(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    fine = build_clustered_index(tmp_path_factory.mktemp("fine"), 500, 8, target_cluster_items=20)
    coarse = build_clustered_index(tmp_path_factory.mktemp("coarse"), 500, 8, target_cluster_items=70)
    return fine, coarse


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["compare", *args, "--json"]) == 0
    found: dict[str, Any] = json.loads(capsys.readouterr().out)
    return found


def test_compare_json_of_two_builds(two_builds: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    fine, coarse = two_builds
    out = _json(capsys, str(fine), str(coarse), "--sample", "40", "--k", "5", "--search-exp", "1,4")
    expected = compare_assignments(IndexReader(fine).locator.read_everything(),  # type: ignore[arg-type]
                                   IndexReader(coarse).locator.read_everything())  # type: ignore[arg-type]
    moved = out["migration"]
    assert moved["common_items"] == 500 and moved["adjusted_rand"] == pytest.approx(expected.adjusted_rand)
    assert moved["pair_agreement"] == pytest.approx(expected.pair_agreement) and moved["flow_count"] > 0
    assert [f["items"] for f in moved["flows"]] == [f.items for f in expected.flows]
    rows = {r["name"]: r for r in out["summary"]["rows"]}
    assert rows["lvl_2 nodes"]["differs"] and not rows["total items"]["differs"]
    recall = out["recall"]
    assert recall["shared_truth"] and [p["search_exp"] for p in recall["curve_b"]] == [1, 4]
    assert all(0 <= p["recall"] <= 1 and p["distance_computations"] > 0 for p in recall["curve_a"])

    assert main(["compare", str(fine), str(fine), "--sample", "10", "--k", "3"]) == 0
    text = capsys.readouterr().out
    assert "pair agreement 1.0000" in text and "adjusted Rand 1.0000" in text and "in 0 flows" in text
    assert not any(line.startswith("*") for line in text.splitlines())


def test_compare_queries_file_and_bad_input(two_builds: tuple[Path, Path], tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    fine, coarse = two_builds
    queries = tmp_path / "q.npy"
    np.save(queries, np.load(fine.parent / "data.npy")[:7] + 0.5)
    out = _json(capsys, str(fine), str(coarse), "--queries", str(queries), "--search-exp", "2")
    assert out["recall"]["source"] == str(queries) and out["recall"]["differing_queries"] is not None
    for args, code, message in ((["--search-exp", "x"], 2, "--search-exp"), (["--k", "0"], 2, "--k"),
                                (["--sample", "0"], 2, "--sample")):
        assert main(["compare", str(fine), str(coarse), *args]) == code
        assert message in capsys.readouterr().err
    assert main(["compare", str(fine), str(tmp_path / "absent.zarr")]) == 2
    assert "absent.zarr" in capsys.readouterr().err


def test_compare_same_answers_over_zip_and_http(two_clusters_path: Path, tmp_path: Path, http_data_url: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    archive = shutil.make_archive(str(tmp_path / "tc"), "zip", two_clusters_path)
    answers = []
    for location in (str(two_clusters_path), archive, f"{http_data_url}/two_clusters.zarr"):
        out = _json(capsys, str(two_clusters_path), location, "--sample", "6", "--k", "2", "--search-exp", "1,2")
        for point in out["recall"]["curve_b"]:
            assert point["bytes_cold"] > 0
        for point in out["recall"]["curve_a"] + out["recall"]["curve_b"]:
            del point["ms"]  # timings differ from run to run
            # a node read in a batch is charged its share of the batch, and the batches differ
            del point["bytes_cold"]
        out["summary"]["rows"] = [r for r in out["summary"]["rows"] if r["name"] not in ("disk bytes", "files")]
        del out["summary"]["b"]
        answers.append(out)
    assert answers[0]["migration"]["adjusted_rand"] == 1.0
    assert answers[1] == answers[0]
    assert answers[2] == answers[0]

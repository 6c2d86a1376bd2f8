"""`ecpfs-viewer tune` on real builds: the JSON report, the table, and the exit statuses."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from tune_data import CLUSTER, cluster_rows

from ecpfs_viewer.cli import build_subcommand_parser, main


@pytest.fixture
def own_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    work = tmp_path / "tmp"
    work.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(work))
    monkeypatch.setenv("TMPDIR", str(work))  # chosen by the user: not a RAM filesystem
    return work


def test_tune_json_recommends_the_known_best(tmp_path: Path, own_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows, queries = cluster_rows(tmp_path)
    code = main(["tune", str(rows), "--levels", "1", "--target-cluster-items", f"{CLUSTER},{8 * CLUSTER}",
                 "--queries", str(queries), "--search-exp", "1,2", "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    report = json.loads(out.out)
    assert [v["name"] for v in report["variants"]] == [f"L1 t{CLUSTER}", f"L1 t{8 * CLUSTER}"]
    assert report["recommendation"]["variant"] == 0 and report["recommendation"]["search_exp"] == 1
    assert report["recommendation"]["command"].endswith(
        f"--levels 1 --target-cluster-items {CLUSTER} --metric L2 --rep-selection offset")
    point = report["variants"][0]["points"][0]
    assert point["recall"] == 1.0 and point["distance_computations_mean"] == 40 + CLUSTER
    assert {"leaves_scanned_p95", "nodes_visited_mean", "on_frontier"} <= point.keys()
    assert report["variants"][0]["balance"][0]["coefficient_of_variation"] == 0.0
    assert "variant 1: L1 t50: built in" in out.err  # progress on stderr
    assert list(own_tmp.iterdir()) == []


def test_tune_table_with_holdout_and_keep(tmp_path: Path, own_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows, _ = cluster_rows(tmp_path, clusters=10)
    keep = tmp_path / "kept"
    code = main(["tune", str(rows), "--levels", "1,2", "--target-cluster-items", "25", "--holdout", "20",
                 "--search-exp", "1,64", "--recall-target", "1", "--keep", str(keep), "--quiet"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert out.err == ""
    assert "480 rows x 16, 20 queries (20 held-out rows (seed 0))" in out.out
    assert "Recommended: L" in out.out and "ecpfs-viewer build " in out.out and f"Variants kept in {keep}" in out.out
    assert sorted(p.name for p in keep.iterdir()) == ["l1_t25.zarr", "l2_t25.zarr"]


def test_tune_refusals_exit_2(tmp_path: Path, own_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "rows.npy"
    np.save(src, np.zeros((3000, 64), np.float32))
    assert main(["tune", str(src), "--levels", "64", "--target-cluster-items", "1", "--json"]) == 2
    out = capsys.readouterr()
    assert json.loads(out.out)["error"]["kind"] == "cannot_start"
    assert "1 variant of 1 left out" in out.err and "L64 t1: about 8.1 GiB, 2,120,387 files and folders" in out.err
    assert "Nothing is left to build: include them anyway (--force)" in out.err
    assert main(["tune", str(src), "--levels", "1,x"]) == 2
    assert "--levels must be comma-separated integers" in capsys.readouterr().err
    assert main(["tune", str(tmp_path / "none.npy")]) == 2
    assert "none.npy: file not found" in capsys.readouterr().err
    assert main(["tune", str(src), "--scheduler", "threads"]) == 2  # tune's tasks go to a cluster only
    assert "--scheduler of tune takes a scheduler address like tcp://HOST:PORT" in capsys.readouterr().err
    assert main(["tune", str(src), "--scheduler", "tcp://127.0.0.1:1", "--keep", str(tmp_path / "kept")]) == 2
    assert "variants built on a cluster are not kept" in capsys.readouterr().err
    assert list(own_tmp.iterdir()) == [] and not (tmp_path / "kept").exists()


def test_tune_leaves_out_the_variants_over_the_size_guard_and_says_so(
        tmp_path: Path, own_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 37 §6: the default grid adapts to the input; --force is the explicit "include anyway"."""
    rows, queries = cluster_rows(tmp_path)
    args = ["tune", str(rows), "--levels", "1,150,200", "--target-cluster-items", str(CLUSTER),
            "--queries", str(queries), "--search-exp", "1", "--quiet"]
    assert main([*args, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [v["name"] for v in report["variants"]] == [f"L1 t{CLUSTER}"]
    assert [(s["name"], s["files"]) for s in report["left_out"]] == [(f"L150 t{CLUSTER}", 76_543),
                                                                      (f"L200 t{CLUSTER}", 102_643)]
    assert main(args) == 0
    table = capsys.readouterr().out
    assert ("2 variants of 3 left out, unusually large for this input (over 4 times the input and 256.0 MiB, "
            "where `build` asks first): L150 t50: about 299.0 MiB") in table and "; --force builds them" in table
    assert build_subcommand_parser().parse_args(["tune", "x.npy", "--force"]).force
    assert list(own_tmp.iterdir()) == []


def test_tune_is_in_the_parser_completion_reads() -> None:
    parser = build_subcommand_parser()
    args = parser.parse_args(["tune", "x.npy", "--rep-selection", "offset,random", "--metric", "ip"])
    assert args.metric == "IP" and args.rep_selection == "offset,random"

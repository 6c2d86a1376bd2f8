"""`ecpfs-viewer drift`: an index grown from 20 % to 100 % by inserts is flagged (exit 1, reasons with
their figures, the build command) and a fresh build of the same rows is not (exit 0, no reasons), with
the fresh build made in a temporary folder that is gone afterwards, or given with --against; --json
follows its schema; thresholds are options; `drift-sim` prints the curve and its JSON follows its schema."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from drift_data import ROWS, grown_and_fresh
from jsonschema import Draft202012Validator

from ecpfs_viewer.cli import main
from ecpfs_viewer.cli.schema import load_schema


@pytest.fixture(scope="module")
def indexes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return grown_and_fresh(tmp_path_factory.mktemp("drift"))


def _valid(name: str, data: dict[str, Any]) -> None:
    errors = list(Draft202012Validator(load_schema(name)).iter_errors(data))
    assert not errors, [f"{list(e.absolute_path)}: {e.message[:300]}" for e in errors]


def _leftovers() -> list[Path]:
    """This process's drift folders (other processes on the machine make their own)."""
    return list(Path(tempfile.gettempdir()).glob(f".ecpfs-drift-{os.getpid()}-*"))


@pytest.mark.long  # two fresh builds and reports: about 10 s on a loaded 2-core machine
def test_a_grown_index_is_flagged_and_a_fresh_build_of_the_same_rows_is_not(
        indexes: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    grown, fresh = indexes
    before = _leftovers()
    assert main(["drift", str(grown), "--quiet"]) == 1
    out = capsys.readouterr().out
    assert "rebuild: " in out and "leaves exceed 4× the target of 20 items" in out
    assert "CROSSED distance computations at search_exp 4" in out
    assert ("rebuild with: ecpfs-viewer build ITEMS.npy grown-rebuilt.zarr --levels 2 --target-cluster-items 20 "
            "--metric L2 --dtype float32 --rep-selection offset") in out
    assert f"between {ROWS // 5 - 19:,} and {ROWS // 5:,} built items" in out  # told by the offset representatives
    assert "own leaf reached (inserted): " in out and f"of {ROWS - ROWS // 5:,}" in out
    assert main(["drift", str(fresh), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "no rebuild needed" in out and "CROSSED" not in out
    assert "own leaf reached (inserted)" not in out  # no id at or past the build's size
    assert _leftovers() == before  # the fresh builds were removed


def test_against_json_holds_the_verdict_and_follows_the_schema(
        indexes: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    grown, fresh = indexes
    assert main(["drift", str(grown), "--against", str(fresh), "--json", "--quiet"]) == 1
    data = json.loads(capsys.readouterr().out)
    _valid("drift", data)
    assert data["fresh"] == str(fresh)
    assert data["verdict"]["rebuild"] is True and len(data["verdict"]["reasons"]) >= 2
    assert data["gap"] == 0 and data["total_items"] == ROWS
    leaf = data["levels"][-1]
    assert leaf["index"]["nodes"] == 20 and leaf["fresh"]["nodes"] == 100  # 400 rows built, then 2000
    assert leaf["index"]["over_4x_target"] > leaf["fresh"]["over_4x_target"]
    assert data["recall"]["index"]["distance_computations"] > 1.5 * data["recall"]["fresh"]["distance_computations"]
    assert main(["drift", str(fresh), "--against", str(fresh), "--json", "--quiet"]) == 0
    same = json.loads(capsys.readouterr().out)
    _valid("drift", same)
    assert same["verdict"] == {**same["verdict"], "rebuild": False, "reasons": []}


def test_thresholds_are_options_and_a_bad_one_is_a_usage_error(
        indexes: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    grown, fresh = indexes
    lenient = ["--cost-ratio", "100", "--over-4x-share", "1", "--imbalance-ratio", "100", "--recall-drop", "1",
               "--reach-gap", "1"]
    assert main(["drift", str(grown), "--against", str(fresh), "--quiet", *lenient]) == 0
    assert "no rebuild needed" in capsys.readouterr().out
    assert main(["drift", str(grown), "--against", str(fresh), "--recall-drop", "2"]) == 2
    assert "--recall-drop must be at most 1" in capsys.readouterr().err
    assert main(["drift", str(grown), "--against", str(fresh), "--cost-ratio", "0.5"]) == 2
    assert "--cost-ratio must be at least 1" in capsys.readouterr().err


def test_drift_sim_prints_the_curve_and_its_json_follows_the_schema(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from drift_data import clustered

    np.save(tmp_path / "rows.npy", clustered(1000))
    before = _leftovers()
    argv = ["drift-sim", str(tmp_path / "rows.npy"), "--built", "25,100", "--levels", "2",
            "--target-cluster-items", "20", "--sample", "50", "--quiet"]
    assert main([*argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    _valid("drift-sim", data)
    first, last = data["points"]
    assert (first["built_rows"], first["inserted_rows"]) == (250, 750) and first["rebuild"] is True
    assert (last["inserted_rows"], last["rebuild"], last["reasons"]) == (0, False, [])
    assert _leftovers() == before

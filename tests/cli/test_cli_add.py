"""`ecpfs-viewer add INDEX ROWS.npy`: prints the id range the rows got, --json follows its schema, and
exits as the other commands do: 2 when it cannot start (no index folder, a URL, ROWS unreadable, the
index locked by another writer of ours), 1 when the rows cannot be added (dimension, NaN), nothing
written in either case."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from jsonschema import Draft202012Validator

from ecpfs_viewer.cli import main
from ecpfs_viewer.cli.schema import load_schema
from ecpfs_viewer.model.build.builder import BuildParams, build_index


@pytest.fixture
def index(tmp_path: Path) -> Path:
    rng = np.random.default_rng(3)
    np.save(tmp_path / "data.npy", rng.standard_normal((300, 5)).astype(np.float32))
    build_index(tmp_path / "data.npy", tmp_path / "idx", BuildParams(levels=2, target_cluster_items=20))
    np.save(tmp_path / "rows.npy", rng.standard_normal((12, 5)).astype(np.float32))
    return tmp_path / "idx"


def _files(index: Path) -> dict[str, bytes]:
    return {str(p.relative_to(index)): p.read_bytes() for p in index.rglob("*") if p.is_file()}


def test_add_prints_the_id_range_and_json_follows_its_schema(index: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = str(index.parent / "rows.npy")
    assert main(["add", str(index), rows, "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "Added 12 rows" in out and "item ids 300..311" in out and "upstream" in out
    assert main(["add", str(index), rows, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert not list(Draft202012Validator(load_schema("add")).iter_errors(data))
    assert data["ids"] == {"start": 312, "stop": 324} and data["rows"] == 12
    assert main(["info", str(index)]) == 0
    assert "Total Items: 324" in capsys.readouterr().out


def test_add_cannot_start_exits_2_and_writes_nothing(index: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = str(index.parent / "rows.npy")
    before = _files(index)
    for argv in (["add", str(index.parent / "absent"), rows], ["add", "http://127.0.0.1:9/idx", rows],
                 ["add", str(index), str(index.parent / "absent.npy")]):
        assert main([*argv, "--json"]) == 2
        captured = capsys.readouterr()
        error = json.loads(captured.out)["error"]
        assert error["kind"] == "cannot_open" and captured.err.startswith("ecpfs-viewer: error: ")
        assert not list(Draft202012Validator(load_schema("add")).iter_errors(json.loads(captured.out)))
    assert _files(index) == before


def test_rows_that_cannot_be_added_exit_1_and_write_nothing(index: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = _files(index)
    np.save(index.parent / "wide.npy", np.ones((3, 7), np.float32))
    nan = np.ones((3, 5), np.float32)
    nan[1, 2] = np.nan
    np.save(index.parent / "nan.npy", nan)
    assert main(["add", str(index), str(index.parent / "wide.npy")]) == 1
    assert "dimension 7, the index has 5" in capsys.readouterr().err
    assert main(["add", str(index), str(index.parent / "nan.npy")]) == 1
    assert "row 1 contains NaN" in capsys.readouterr().err
    assert _files(index) == before


def test_a_second_writer_is_refused_with_exit_2(index: Path, capsys: pytest.CaptureFixture[str]) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent("""
            import sys
            from ecpfs_viewer.model.build.write_lock import index_write_lock
            with index_write_lock(sys.argv[1]):
                print("locked", flush=True)
                sys.stdin.readline()
        """), str(index)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env={**os.environ})
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        assert main(["add", str(index), str(index.parent / "rows.npy"), "--wait", "0"]) == 2
        err = capsys.readouterr().err
        assert "another ecpfs-viewer writer" in err and "upstream" in err
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(timeout=30)

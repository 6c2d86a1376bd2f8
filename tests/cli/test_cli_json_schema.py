"""--json is a contract: every subcommand's output is one object with "schema_version", of one shape
whatever the flags, valid against the JSON Schema shipped in the package (`ecpfs-viewer schema NAME`);
a failure with --json prints the error object, valid against error.schema.json."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from jsonschema import Draft202012Validator
from tune_data import cluster_rows

from ecpfs_viewer.cli import SUBCOMMANDS, build_subcommand_parser, main
from ecpfs_viewer.cli.contract import SCHEMA_VERSION
from ecpfs_viewer.cli.schema import SCHEMA_NAMES, load_schema


def _json(capsys: pytest.CaptureFixture[str], *argv: str, code: int | None = 0) -> dict[str, Any]:
    got = main(list(argv))
    out = capsys.readouterr()
    if code is not None:
        assert got == code, out.err
    data = json.loads(out.out)
    assert isinstance(data, dict) and data["schema_version"] == SCHEMA_VERSION
    assert next(iter(data)) == "schema_version"
    return data


def _valid(name: str, data: dict[str, Any]) -> None:
    errors = sorted(Draft202012Validator(load_schema(name)).iter_errors(data), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.absolute_path)}: {e.message[:300]}" for e in errors]


def _keys(data: Any) -> Any:
    """The shape of a JSON value: keys of objects (recursively into the first list item), not values."""
    if isinstance(data, dict):
        return {k: _keys(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_keys(data[0])] if data else []
    return None


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_every_shipped_schema_is_a_valid_draft_2020_12_schema(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    Draft202012Validator.check_schema(load_schema(name))
    assert main(["schema", name]) == 0
    assert json.loads(capsys.readouterr().out) == load_schema(name)


def test_schema_lists_a_schema_for_every_subcommand_with_json(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_subcommand_parser()
    with_json = {name for name in SUBCOMMANDS
                 if "--json" in parser._subparsers._group_actions[0].choices[name]._option_string_actions}  # type: ignore[union-attr]
    assert with_json == set(SCHEMA_NAMES) - {"error"}
    assert main(["schema", "--list"]) == 0
    assert capsys.readouterr().out.split() == list(SCHEMA_NAMES)
    assert main(["schema", "build"]) == 2 and "no schema for 'build'" in capsys.readouterr().err
    assert main(["schema"]) == 2


def test_info_and_check_follow_their_schema(two_clusters_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    index = str(two_clusters_copy)
    full = _json(capsys, "info", "--json", index)
    counted = _json(capsys, "info", "--json", "--no-leaf-sizes", index)
    for data in (full, counted):
        _valid("info", data)
    assert _keys(full) == _keys(counted)  # the leaf entry keeps its keys when the sizes are not read
    assert [row["sizes_read"] for row in counted["level_stats"]] == [True, False]
    assert counted["level_stats"][-1]["size_max"] is None
    _valid("check", _json(capsys, "check", "--json", index))
    deep = _json(capsys, "check", "--json", "--deep", index)
    _valid("check", deep)
    assert all(f["code"].startswith("ECPFS-") for f in deep["findings"])


def test_check_with_findings_and_ignored_codes_follows_its_schema(two_clusters_copy: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    import zarr

    zarr.open_array(two_clusters_copy / "info" / "metric", mode="r+")[...] = "cosine"
    data = _json(capsys, "check", "--json", str(two_clusters_copy), code=1)
    _valid("check", data)
    assert [f["code"] for f in data["findings"]] == ["ECPFS-E030"]
    ignored = _json(capsys, "check", "--json", "--ignore", "ECPFS-E030", str(two_clusters_copy), code=0)
    _valid("check", ignored)
    assert ignored["ok"] is True and ignored["errors"] == 0 and ignored["ignored"] == 1
    assert [f["code"] for f in ignored["ignored_findings"]] == ["ECPFS-E030"]


def test_search_recall_locate_workload_compare_follow_their_schemas(two_clusters_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    index = str(two_clusters_path)
    plain = _json(capsys, "search", index, "--item", "3", "--json", "--quiet")
    explained = _json(capsys, "search", index, "--item", "3", "--json", "--explain", "--quiet")
    for data in (plain, explained):
        _valid("search", data)
    assert plain.keys() == explained.keys() and plain["exact"] is None and explained["exact"]
    rows = _json(capsys, "recall", index, "--sample", "4", "--json", "--quiet")
    mapped = _json(capsys, "recall", index, "--sample", "4", "--json", "--quiet", "--miss-map")
    for data in (rows, mapped):
        _valid("recall", data)
    assert rows.keys() == mapped.keys() == {"schema_version", "rows", "miss_map"}
    assert rows["miss_map"] is None and mapped["miss_map"] is not None
    _valid("locate", _json(capsys, "locate", index, "3", "--json"))
    _valid("workload", _json(capsys, "workload", index, "--sample", "4", "--json", "--quiet"))
    _valid("compare", _json(capsys, "compare", index, index, "--sample", "4", "--json", "--quiet"))


def test_search_recall_option_refuses_json_it_cannot_give(two_clusters_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    data = _json(capsys, "search", str(two_clusters_path), "--recall", "3", "--json", code=2)
    _valid("error", data)
    assert "recall --json" in data["error"]["message"]


def test_tune_follows_its_schema(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    work = tmp_path / "tmp"
    work.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(work))
    monkeypatch.setenv("TMPDIR", str(work))
    rows, queries = cluster_rows(tmp_path, clusters=8)
    data = _json(capsys, "tune", str(rows), "--levels", "1", "--target-cluster-items", "25", "--queries",
                 str(queries), "--search-exp", "1,2", "--json", "--quiet")
    _valid("tune", data)
    assert data["recommendation"] is not None
    unreachable = _json(capsys, "tune", str(rows), "--levels", "1", "--target-cluster-items", "25", "--queries",
                        str(queries), "--search-exp", "0", "--recall-target", "1", "--json", "--quiet")
    _valid("tune", unreachable)


@pytest.mark.parametrize("argv", [
    ["info", "--json", "/nonexistent/index.zarr"],
    ["check", "--json", "--ignore", "ECPFS-X001", "/nonexistent/index.zarr"],
    ["recall", "/nonexistent/index.zarr", "--json", "--k", "0"],
    ["locate", "--json"],
])
def test_a_failure_with_json_prints_the_versioned_error_object(argv: list[str],
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    data = _json(capsys, *argv, code=2)
    _valid("error", data)
    for name in SCHEMA_NAMES:  # every command's schema admits it, so stdout always validates
        _valid(name, data)
    assert data["error"]["exit_code"] == 2


def test_the_schemas_ship_in_the_package_data() -> None:
    import tomllib

    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text(encoding="utf-8"))
    assert "schemas/*.schema.json" in pyproject["tool"]["setuptools"]["package-data"]["ecpfs_viewer.resources"]
    assert np.all([load_schema(name)["$schema"].endswith("2020-12/schema") for name in SCHEMA_NAMES])

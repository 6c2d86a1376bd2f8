"""`ecpfs-viewer info` and `ecpfs-viewer check` as a user runs them (no Qt involved)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from command_runs import run  # tests/ is on sys.path (conftest)

from ecpfs_viewer.cli import main


def test_info_prints_ecp_info_lines_first(capsys, two_clusters_path: Path) -> None:
    code, out, _ = run(capsys, "info", str(two_clusters_path))
    assert code == 0
    lines = out.splitlines()
    assert lines[:6] == ["Levels: 2", "Metric: L2", "Normalized: false", "Total Items: 8", "Next Item Id: 8",
                         "Total Representatives: 4"]
    for expected in ("Format Version: 1", "Dimension: 2", "Stored Dtype: float32",
                     "Fan-out: 2 (expected ceil(R^(1/L)) = 2)", "Node Chunk Rows: 65536",
                     "Representative Chunk Rows: 1048576", "Writer: zarrs 0.23.14",
                     "Sum of leaf sizes: 8 (matches Total Items 8)"):
        assert expected in lines
    table = [line.split() for line in lines if line.startswith("lvl_")]
    assert table[0][:4] == ["lvl_1", "2", "2", "0"]
    assert table[1][:5] == ["lvl_2", "(leaves)", "4", "4", "0"]


def test_info_gap_note_is_indented(capsys, two_clusters_copy: Path) -> None:
    import zarr

    zarr.open_array(two_clusters_copy / "info" / "next_item_id", mode="r+")[...] = 11
    _, out, _ = run(capsys, "info", str(two_clusters_copy))
    lines = out.splitlines()
    at = lines.index("Next Item Id: 11")
    assert lines[at + 1].startswith("  (3 item ids reserved but never written")
    assert lines[at + 2] == "Total Representatives: 4"


def test_info_json(capsys, two_clusters_path: Path) -> None:
    code, out, _ = run(capsys, "info", "--json", str(two_clusters_path))
    data = json.loads(out)
    assert code == 0
    assert (data["levels"], data["metric"], data["total_items"], data["representatives"]) == (2, "L2", 8, 4)
    assert (data["fan_out"], data["expected_fan_out"], data["dim"], data["dtype"]) == (2, 2, 2, "float32")
    assert data["layout"]["supported"] is True and data["writer"] == "zarrs 0.23.14"
    assert [s["node_count"] for s in data["level_stats"]] == [2, 4]
    assert data["level_stats"][1]["leaf_sum"] == 8


def test_info_works_on_a_zip_with_a_top_folder(capsys, two_clusters_path: Path, tmp_path: Path) -> None:
    archive = tmp_path / "index.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for file in two_clusters_path.rglob("*"):
            if file.is_file():
                zf.write(file, "two_clusters.zarr/" + file.relative_to(two_clusters_path).as_posix())
    code, out, _ = run(capsys, "info", str(archive))
    assert code == 0 and "Total Representatives: 4" in out and "lvl_2 (leaves)" in out


def test_info_on_a_legacy_index_names_it(capsys, two_clusters_copy: Path) -> None:
    for name in ("info/format_version", "info/total_items", "info/next_item_id"):
        shutil.rmtree(two_clusters_copy / name)
    code, out, _ = run(capsys, "info", str(two_clusters_copy))
    assert code == 0
    assert out.splitlines()[0].startswith("!! RUST PRE-V1 INDEX: pre-v1 Rust index: missing info/total_items")
    assert "Total Items: -" in out


def test_check_exit_codes(capsys, two_clusters_path: Path, two_clusters_copy: Path, tmp_path: Path) -> None:
    code, out, _ = run(capsys, "check", str(two_clusters_path))
    assert code == 0 and "OK - 0 error(s), 0 warning(s)" in out
    shutil.rmtree(two_clusters_copy / "rep_item_ids")
    code, out, _ = run(capsys, "check", str(two_clusters_copy))
    assert code == 1
    assert "ERROR: rep_item_ids: missing (required by format version 1)" in out
    code, _, err = run(capsys, "check", str(tmp_path / "nowhere.zarr"))
    assert code == 2 and "no such file or directory" in err
    (tmp_path / "empty").mkdir()
    code, _, err = run(capsys, "check", str(tmp_path / "empty"))
    assert code == 2 and "empty" in err


def test_check_ignore_leaves_a_code_out_of_the_verdict_and_says_so(capsys, two_clusters_copy: Path) -> None:
    shutil.rmtree(two_clusters_copy / "rep_item_ids")
    code, out, _ = run(capsys, "check", str(two_clusters_copy))
    codes = set(re.findall(r"\[(ECPFS-E\d{3})\]", out))
    assert code == 1 and "ECPFS-E022" in codes  # the required array missing, with its code on the line
    code, out, _ = run(capsys, "check", str(two_clusters_copy), *[f"--ignore={c}" for c in sorted(codes)])
    assert code == 0, out
    head = out.splitlines()[0]
    assert head.startswith(f"{two_clusters_copy}: OK - 0 error(s)") and "ignored (" in head and "ECPFS-E022" in head
    assert "[ECPFS-E022]" not in out  # listed as ignored in the summary line, not as a finding
    short = ",".join(c.removeprefix("ECPFS-").lower() for c in sorted(codes))  # short forms, one option
    assert run(capsys, "check", str(two_clusters_copy), "--ignore", short)[0] == 0
    partial = run(capsys, "check", str(two_clusters_copy), "--ignore", "ECPFS-W005")
    assert partial[0] == 1  # ignoring another code changes nothing
    code, _, err = run(capsys, "check", str(two_clusters_copy), "--ignore", "E999")
    assert code == 2 and "'E999' is not a finding code" in err


def test_check_json(capsys, two_clusters_copy: Path) -> None:
    import zarr

    zarr.open_array(two_clusters_copy / "info" / "metric", mode="r+")[...] = "cosine"
    code, out, _ = run(capsys, "check", "--json", str(two_clusters_copy))
    data = json.loads(out)
    assert code == 1 and data["ok"] is False
    assert {"code": "ECPFS-E030", "severity": "error", "path": "info/metric",
            "message": "'cosine' is not a metric ecpfs knows (expected 'L2' or 'IP', case-sensitive)",
            "sampled": None} in data["findings"]


def test_console_entry_point_runs_info(two_clusters_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "ecpfs_viewer", "info", str(two_clusters_path)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("Levels: 2\n")


def test_info_over_http(capsys, http_data_url: str) -> None:
    code, out, err = run(capsys, "info", f"{http_data_url}/two_clusters.zarr/")
    assert code == 0, err
    assert "Total Representatives: 4" in out and "lvl_2 (leaves)" in out


def test_version_is_the_package_version(capsys) -> None:
    from ecpfs_viewer import __version__

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"ecpfs-viewer {__version__}"


def test_verbose_prints_debug_lines_on_stderr(capsys, two_clusters_path: Path) -> None:
    code, out, err = run(capsys, "info", str(two_clusters_path))
    assert code == 0 and "DEBUG" not in err
    code, verbose_out, err = run(capsys, "info", str(two_clusters_path), "--verbose", "--leaf-sizes")
    assert code == 0 and verbose_out == out  # the report itself is unchanged (leaf sizes read, as the first did)
    assert " DEBUG ecpfs_viewer.cli [MainThread]: ecpfs-viewer " in err


def _leaves_stall(path: str) -> bool:
    return path.startswith("two_clusters.zarr/lvl_2/node_")  # every leaf; lvl_2/zarr.json answers


def test_info_over_http_reads_no_leaf_document(capsys, two_clusters_path: Path) -> None:
    """On a remote store info counts the leaves from the listing: a host whose leaf documents never
    answer still gets the whole summary at once; --leaf-sizes asks for them (and then waits)."""
    import remote_fixtures

    with remote_fixtures.serve_hostile(two_clusters_path.parent, "stall", _leaves_stall) as (url, _tally):
        code, out, err = run(capsys, "info", f"{url}/two_clusters.zarr", "--timeout", "20")
        assert code == 0, err
        lines = out.splitlines()
        assert "Total Representatives: 4" in lines
        assert [line.split() for line in lines if line.startswith("lvl_2")] == [
            ["lvl_2", "(leaves)", "4", "4", "0", "-", "-", "-", "-", "-", "-"]]
        assert ("Sum of leaf sizes: not read (4 leaf documents, one request each; `check` or `info --leaf-sizes` "
                "reads them)") in lines
        assert "Problems:" not in out
        code, out, _ = run(capsys, "info", f"{url}/two_clusters.zarr", "--json", "--timeout", "20")
        leaves = json.loads(out)["level_stats"][-1]
        assert code == 0 and (leaves["node_count"], leaves["sizes_read"], leaves["leaf_sum"]) == (4, False, None)
        code, out, _ = run(capsys, "info", f"{url}/two_clusters.zarr", "--leaf-sizes", "--timeout", "1")
        # asked, and not answered: the leaf figures are said to be incomplete (exit 1), never summed as zeros
        assert code == 1 and re.search(r"lvl_2/node_\d/(embeddings|item_ids)/zarr\.json: no answer within 1 s", out)
        assert ("Sum of leaf sizes: not known (incomplete: the figures lack 4 nodes that could not be read; "
                "retry)") in out


def test_info_leaf_sizes_switch_on_a_folder(capsys, two_clusters_path: Path) -> None:
    code, out, _ = run(capsys, "info", str(two_clusters_path), "--no-leaf-sizes")
    assert code == 0 and "Sum of leaf sizes: not read (4 leaf documents" in out
    code, out, _ = run(capsys, "info", str(two_clusters_path))
    assert code == 0 and "Sum of leaf sizes: 8 (matches Total Items 8)" in out

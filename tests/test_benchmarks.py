"""The benchmark scripts keep working: they are not run by anything else, and broke unnoticed once.

bench_scale.py runs end to end on two tiny indexes built into a temporary ECPFS_BENCH_CACHE (a
couple of actions, one fresh process each); every other script is imported, which is where
a renamed model function breaks them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"


def _env(cache: Path) -> dict[str, str]:
    return {**os.environ, "ECPFS_BENCH_CACHE": str(cache), "QT_QPA_PLATFORM": "offscreen",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


@pytest.mark.timeout(400)  # eight fresh processes: about 30 s alone, 110 s at a load of 14 on 2 cores
def test_bench_scale_prints_both_sizes_with_zarr_python_beside(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "bench_scale.py"), "--rows-small", "2000", "--rows-large", "20000",
         "--repeat", "1", "--delay-ms", "1", "--only", "locate,remote-info", "--json", str(out)],
        capture_output=True, text=True, timeout=600, env=_env(tmp_path / "cache"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("locate an absent id, first process") and "x " in line for line in lines), done.stdout
    figures = json.loads(out.read_text())
    assert figures["sizes"] == ["2k", "20k"]
    locate, info = figures["results"]
    for size, rows in (("2k", 2000), ("20k", 20_000)):
        ours = locate["figures"][size]
        assert ours["seconds"] > 0 and ours["rss_mb"] > 10, ours  # exit 1 (absent) was seen, memory read
        assert f"{rows:,} ids" in locate["zarr_python"][size]["note"]  # zarr-python read every leaf
        index = tmp_path / "cache" / f"bench_{rows // 1000}k_64_l3_t50.zarr"
        documents = sum(1 for _ in index.rglob("zarr.json"))
        assert f"every zarr.json: {documents:,} documents" in info["zarr_python"][size]["note"]
        assert 0 < info["figures"][size]["extra"]["requests"] < documents, info  # counted by the server


def test_every_benchmark_script_imports(tmp_path: Path) -> None:
    scripts = sorted(str(path) for path in BENCHMARKS.glob("bench_*.py"))
    code = "import runpy, sys\nfor path in sys.argv[1:]:\n    runpy.run_path(path, run_name='imported')\n"
    done = subprocess.run([sys.executable, "-c", code, *scripts], capture_output=True, text=True, timeout=300,
                          env=_env(tmp_path), cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert len(scripts) >= 9


@pytest.mark.timeout(300)
def test_bench_tune_prints_the_shares_and_the_plain_build_baseline(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "bench_tune.py"), "--rows", "2000", "--dim", "16", "--levels", "1,2",
         "--targets", "50", "--holdout", "20", "--search-exp", "1,4"],
        capture_output=True, text=True, timeout=300, env=_env(tmp_path / "cache"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("tune 2,000 x 16, 2 variants, 20 held-out queries, search_exp 1,4:"), done.stdout
    assert lines[1].startswith("  building ") and "searching" in lines[1]
    assert [line.split()[0] for line in lines[2:4]] == ["L1", "L2"]
    assert lines[-1].startswith("baseline: plain build_index of the same 2 variants:")

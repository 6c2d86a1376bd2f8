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
from typing import Any

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
def test_bench_search_cost_prints_both_modes_and_the_overhead(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(BENCHMARKS / "bench_search_cost.py"), "--rows", "2000", "--queries",
                           "20", "--rounds", "1"], capture_output=True, text=True, timeout=280, env=_env(tmp_path),
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "20 queries x 1 rounds (2,000 items)" in done.stdout
    assert "cost counted" in done.stdout and "without (baseline, counted=False)" in done.stdout
    assert "overhead" in done.stdout and "warm reads 0 B" in done.stdout


@pytest.mark.timeout(400)
def test_bench_diagnostics_prints_figures_beside_baselines(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "bench_diagnostics.py"), "--rows", "3000", "--queries", "40",
         "--baseline-sample", "20"],
        capture_output=True, text=True, timeout=600, env=_env(tmp_path / "cache"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for line in ("self-reachability, every item", "baseline: ecp_search per item, extrapolated",
                 "workload of 40 queries", "baseline: exact search", "Self-Reachability dialog, every item"):
        assert line in out, out
    assert "3,000 items" in out and "longest GUI stall" in out and "load average" in out


@pytest.mark.timeout(400)
def test_bench_compare_runs_on_two_tiny_builds_with_its_gui_stalls(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(BENCHMARKS / "bench_compare.py"), "--rows", "3000", "--queries", "20",
                           "--target", "120", "--gui"],
                          capture_output=True, text=True, timeout=600, env=_env(tmp_path / "cache"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("compare (everything, fresh readers)") and "target <= 15 s" in line for line in lines)
    assert any(line.startswith("baseline: exact search alone") and " x" in line for line in lines), done.stdout
    assert any(line.startswith("comparison view") and "longest GUI stall" in line for line in lines), done.stdout
    assert (tmp_path / "cache" / "bench_3k_64_l3_t120.zarr").is_dir()


@pytest.mark.timeout(400)
def test_the_index_map_and_miss_map_benchmarks_print_their_figures(tmp_path: Path) -> None:
    """Both on a 2,000-item index (built into the test's cache), the map also on 2,000 synthetic nodes."""
    env = _env(tmp_path / "cache")
    drawn = subprocess.run([sys.executable, str(BENCHMARKS / "bench_index_map.py"), "--rows", "2000",
                            "--synthetic", "2000", "--repeat", "1"],
                           capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert drawn.returncode == 0, drawn.stderr
    assert "layout, fresh reader (worker)" in drawn.stdout
    assert "draw 2,000 nodes, GUI thread" in drawn.stdout and "one QGraphicsRectItem each" in drawn.stdout
    index = next((tmp_path / "cache").rglob("*.zarr"))
    window = subprocess.run([sys.executable, str(BENCHMARKS / "bench_index_map.py"), "--window", str(index),
                             "--png", str(tmp_path / "shown")],
                            capture_output=True, text=True, timeout=300, cwd=tmp_path,
                            env={**env, "ECPFS_VIEWER_CACHE": str(tmp_path / "viewer-cache")})
    assert window.returncode == 0, window.stderr
    assert "index map in the window" in window.stdout and "first picture" in window.stdout
    assert "nan" not in window.stdout.split("peak")[0]  # both moments were seen
    assert (tmp_path / "shown_first.png").stat().st_size and (tmp_path / "shown_map.png").stat().st_size
    missed = subprocess.run([sys.executable, str(BENCHMARKS / "bench_miss_map.py"), "--rows", "2000",
                             "--queries", "8", "--repeat", "1"],
                            capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert missed.returncode == 0, missed.stderr
    assert "recall sweep with the miss map" in missed.stdout and "target <= +10%" in missed.stdout


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


def _benchmark_module(name: str) -> Any:
    """A benchmark script, imported for its helpers."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        return __import__(name)
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_a_childs_peak_memory_is_its_own_not_the_benchmarks(tmp_path: Path) -> None:
    """A process started directly begins with its parent's peak (ru_maxrss survives exec): a child
    of a 400 MB benchmark read as 400 MB whatever it used."""
    bench_scale = _benchmark_module("bench_scale")
    ballast = bytearray(400 << 20)
    ballast[::4096] = b"x" * len(ballast[::4096])  # every page touched: resident
    grow = "big = bytearray(150 << 20); big[::4096] = b'y' * len(big[::4096])"
    run = bench_scale.run_child([sys.executable, "-c", grow], dict(os.environ))
    del ballast
    assert run.returncode == 0, run.stderr
    assert 150 < run.rss_mb < 300, run  # the child's 150 MB and its interpreter, not the parent's 400
    assert run.seconds > 0 and run.cpu_s > 0


def test_a_floor_reads_every_file_whole(tmp_path: Path) -> None:
    floors = _benchmark_module("_floors")
    paths = []
    for n in range(300):
        path = tmp_path / f"f{n}"
        path.write_bytes(b"z" * n)
        paths.append(str(path))
    seconds, nbytes = floors.read_all(paths)
    assert nbytes == sum(range(300)) and seconds > 0
    assert floors.read_all([])[1] == 0


def test_the_read_log_holds_the_files_a_child_python_reads(tmp_path: Path) -> None:
    """A helper process reads part of an index for its action: its files are in the action's floor."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "mine").write_bytes(b"a")
    (data / "childs").write_bytes(b"b")
    child = tmp_path / "child.py"
    child.write_text(f"open({str(data / 'childs')!r}, 'rb').read()\n")
    script = tmp_path / "action.py"
    script.write_text(f"import subprocess, sys\nopen({str(data / 'mine')!r}, 'rb').read()\n"
                      f"subprocess.run([sys.executable, {str(child)!r}], check=True)\n")
    log = tmp_path / "log.txt"
    done = subprocess.run([sys.executable, str(BENCHMARKS / "_read_log.py"), str(log), str(data), str(script)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert set(log.read_text().splitlines()) == {str((data / name).resolve()) for name in ("mine", "childs")}

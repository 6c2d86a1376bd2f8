"""Build benchmarks: prints measured figures next to a zarr-python baseline (never pass/fail).

    .venv-newest/bin/python benchmarks/bench_build.py                  # 200k x 64 and 100k x 128
    .venv-newest/bin/python benchmarks/bench_build.py --big            # + 1.5 GB streaming build, peak RSS
    .venv-newest/bin/python benchmarks/bench_build.py --dir /some/disk # where inputs and outputs go
    .venv-newest/bin/python benchmarks/bench_build.py --scale [--sizes 200k,2M,10M]  # issue 35's build

Targets from issue 3: 200,000 x 64 float32, levels 3, target 50 (4,272 nodes) <= 4 s;
100,000 x 128, levels 3, target 100 <= 3 s; a 1.5 GB input under 1 GB peak resident memory.
With --scale (issue 35): `ecpfs-viewer build` of the benchmark vectors (benchmarks/_bench_index.py:
64-d, levels 3, target 50) as a user runs it, a fresh process, beside its floor, `cp -r` of the
index it wrote (the same files and bytes written again; target at 10M: <= 1.25x that, <= 2 GB
resident).
The machine is shared: the load average is printed with each figure.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ecpfs_viewer.model.build.builder import BuildParams, build_index


def clustered(rows: int, dim: int, seed: int, centers: int = 2000) -> np.ndarray:
    """Gaussian blobs: closer to real embeddings than white noise, same cost to build."""
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((centers, dim)).astype(np.float32) * 4
    out = np.empty((rows, dim), np.float32)
    step = 100_000
    for lo in range(0, rows, step):
        n = min(step, rows - lo)
        out[lo:lo + n] = c[rng.integers(0, centers, n)] + rng.standard_normal((n, dim), dtype=np.float32)
    return out


def load() -> str:
    return f"load {os.getloadavg()[0]:.2f}"


def zarr_python_baseline(out: Path, dim: int, rows_per_node: int, chunk_rows: int, nodes: int,
                         sample: int = 60) -> float:
    """Seconds per node writing group + embeddings + item_ids + border through zarr-python."""
    import zarr
    from zarr.codecs import BytesCodec, ZstdCodec

    root = zarr.open_group(str(out), mode="w")
    lvl = root.create_group("lvl_3")
    rng = np.random.default_rng(0)
    emb = rng.standard_normal((rows_per_node, dim)).astype(np.float32)
    ids = np.arange(rows_per_node, dtype=np.uint32)
    t = time.perf_counter()
    for i in range(sample):
        g = lvl.create_group(f"node_{i}")
        a = g.create_array("embeddings", shape=emb.shape, chunks=(chunk_rows, dim), dtype="float32",
                           serializer=BytesCodec(), compressors=[ZstdCodec(level=3, checksum=False)],
                           fill_value=0.0)
        a[:] = emb
        b = g.create_array("item_ids", shape=ids.shape, chunks=(chunk_rows,), dtype="uint32",
                           serializer=BytesCodec(), compressors=[ZstdCodec(level=3, checksum=False)],
                           fill_value=0)
        b[:] = ids
        g.create_array("border", shape=(2,), chunks=(2,), dtype="float32", compressors=None, fill_value=0.0)
    per = (time.perf_counter() - t) / sample
    print(f"  baseline zarr-python: {per * 1e3:.1f} ms per node ({sample} nodes), "
          f"extrapolated to {nodes} nodes: {per * nodes:.1f} s")
    shutil.rmtree(out, ignore_errors=True)
    return per


def bench(workdir: Path, rows: int, dim: int, levels: int, target: int, goal: float, repeat: int) -> None:
    src = workdir / f"in_{rows}x{dim}.npy"
    if not src.exists():
        np.save(src, clustered(rows, dim, seed=rows + dim))
    params = BuildParams(levels=levels, target_cluster_items=target)
    print(f"{rows:,} x {dim} float32, levels {levels}, target {target} (goal <= {goal:g} s)")
    best = None
    for i in range(repeat):
        out = workdir / f"out_{rows}x{dim}_{i}.zarr"
        shutil.rmtree(out, ignore_errors=True)
        t = time.perf_counter()
        res = build_index(src, out, params)
        wall = time.perf_counter() - t
        best = wall if best is None else min(best, wall)
        phases = ", ".join(f"{k} {v:.2f}" for k, v in res.phase_seconds.items())
        print(f"  run {i + 1}: {wall:.2f} s wall  [{phases}]  nodes {sum(res.nodes_per_level)} "
              f"{res.nodes_per_level}  ({load()})")
    print(f"  best of {repeat}: {best:.2f} s")
    n_nodes = sum(res.nodes_per_level)
    from ecpfs_viewer.model.ecpfs import sizing
    zarr_python_baseline(workdir / "baseline.zarr", dim, max(1, rows // n_nodes),
                         sizing.chunk_rows(dim, "float32", params.node_chunk_bytes), n_nodes)
    for i in range(repeat):
        shutil.rmtree(workdir / f"out_{rows}x{dim}_{i}.zarr", ignore_errors=True)


BIG_CHILD = """
import sys, time
sys.path.insert(0, {root!r})
from ecpfs_viewer.model.build.builder import BuildParams, build_index
t = time.perf_counter()
res = build_index({src!r}, {out!r}, BuildParams(levels=3, target_cluster_items=100))
print(f"{{time.perf_counter() - t:.1f}} {{sum(res.nodes_per_level)}}")
"""


def bench_big(workdir: Path, gb: float = 1.5, dim: int = 128) -> None:
    rows = int(gb * 1e9) // (dim * 4)
    src = workdir / f"big_{rows}x{dim}.npy"
    if not src.exists():
        print(f"writing {rows:,} x {dim} float32 ({rows * dim * 4 / 1e9:.2f} GB) ...")
        mm = np.lib.format.open_memmap(src, mode="w+", dtype=np.float32, shape=(rows, dim))
        step = 200_000
        for lo in range(0, rows, step):
            n = min(step, rows - lo)
            mm[lo:lo + n] = clustered(n, dim, seed=lo)
            mm.flush()
        del mm
    out = workdir / "big.zarr"
    shutil.rmtree(out, ignore_errors=True)
    code = BIG_CHILD.format(root=str(Path(__file__).resolve().parents[1]), src=str(src), out=str(out))
    print(f"{rows:,} x {dim} float32 ({src.stat().st_size / 1e9:.2f} GB), levels 3, target 100, "
          "in a child process (goal: peak RSS < 1 GB)")
    from bench_scale import run_child  # the child's own peak, not this process's (which wrote the input)

    run = run_child([sys.executable, "-c", code], dict(os.environ))
    if run.returncode != 0:
        print(run.stderr)
        return
    wall, nodes = run.stdout.split()
    print(f"  {float(wall):.1f} s wall, peak resident memory {run.rss_mb:.0f} MiB, {nodes} nodes  ({load()})")
    shutil.rmtree(out, ignore_errors=True)


def _timed(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True)
    return time.perf_counter() - started


def _settled(after_removal: bool = False) -> None:
    """Let the disk finish what came before: dirty pages, and after a removal of many files ext4's
    skipping of inodes freed in the last 60 s (300 s while their table block is dirty) when it
    allocates new ones, which made the next build or copy several times slower (perf: most of the
    time in the kernel's `recently_deleted`)."""
    subprocess.run(["sync"], check=False)
    time.sleep(65 if after_removal else 2)
    subprocess.run(["sync"], check=False)


def bench_scale(workdir: Path, sizes: list[int], floor: bool = True) -> None:
    """The command-line build at each size, its peak resident memory and its floor (`cp -r` of its output).

    The input is written by a child, so this process stays small (run_child reports the build's own
    peak either way)."""
    from _bench_index import LEVELS, TARGET_CLUSTER_ITEMS
    from bench_scale import child_env, run_child

    print(f"ecpfs-viewer build of the benchmark vectors (levels {LEVELS}, target {TARGET_CLUSTER_ITEMS}), a fresh "
          "process each, then sync; floor: cp -r of the index it wrote, then sync")
    first: tuple[float, float] | None = None
    for rows in sizes:
        src, out, copy = workdir / f"vectors_{rows}.npy", workdir / f"built_{rows}.zarr", workdir / f"copy_{rows}.zarr"
        subprocess.run([sys.executable, "-c", "import sys; from _bench_index import write_vectors; "
                        "write_vectors(sys.argv[1], int(sys.argv[2]))", str(src), str(rows)], check=True,
                       cwd=Path(__file__).resolve().parent)
        _settled(after_removal=True)  # files removed just before this run (an earlier index) slow the build too
        run = run_child([sys.executable, "-m", "ecpfs_viewer", "build", str(src), str(out), "--levels", str(LEVELS),
                         "--target-cluster-items", str(TARGET_CLUSTER_ITEMS), "--force"], child_env(workdir / "cache"))
        if run.returncode:
            print(f"  {rows:,}: build failed (exit {run.returncode}): {run.stderr.strip()[-500:]}")
            return
        built = run.seconds + _timed(["sync"])
        src.unlink()
        growth = ""
        if first is not None:
            growth = (f"; growth from {sizes[0]:,}: time x{built / first[0]:.1f}, "
                      f"memory x{run.rss_mb / first[1]:.1f} for x{rows / sizes[0]:.0f} the items")
        else:
            first = (built, run.rss_mb)
        print(f"  {rows:>10,}: build {built:7.1f} s (cpu {run.cpu_s:.1f}), peak {run.rss_mb:,.0f} MB (target at 10M: "
              f"<= 2 GB){growth}  (load {run.load:.1f})", flush=True)
        if floor:
            _print_floor(out, copy, built)
        shutil.rmtree(out)


def _print_floor(out: Path, copy: Path, built: float) -> None:
    """cp -r of the index the build wrote, warm and (where the page cache may be dropped) cold."""
    from _floors import can_drop_caches, evict

    files = sum(len(names) for _top, _dirs, names in os.walk(out))
    nbytes = sum(os.path.getsize(os.path.join(top, n)) for top, _dirs, names in os.walk(out) for n in names)
    for cold in (False, True) if can_drop_caches() else (False,):
        _settled(after_removal=cold)
        if cold:
            evict([out])
        seconds = _timed(["cp", "-r", str(out), str(copy)]) + _timed(["sync"])
        print(f"              floor: cp -r {'cold' if cold else 'warm'} {seconds:.1f} s ({files:,} files, "
              f"{nbytes / 1e9:.2f} GB): the build took x{built / seconds:.2f} (target at 10M: <= 1.25)", flush=True)
        shutil.rmtree(copy)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default=None, help="work directory (default: a temp dir, removed after)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--big", action="store_true", help="also run the 1.5 GB streaming build")
    ap.add_argument("--only-big", action="store_true")
    ap.add_argument("--scale", action="store_true", help="only the command-line build at --sizes (issue 35)")
    ap.add_argument("--sizes", default="200k,2M,10M")
    ap.add_argument("--no-floor", action="store_true",
                    help="with --scale: no cp -r (it needs the size of the index free again)")
    args = ap.parse_args()
    work = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="ecpfs-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"work dir {work}, {os.cpu_count()} CPUs, {load()}")
    try:
        if args.scale:
            from bench_scale import parse_size

            bench_scale(work, [parse_size(size) for size in args.sizes.split(",")], floor=not args.no_floor)
        elif not args.only_big:
            bench(work, 200_000, 64, 3, 50, 4.0, args.repeat)
            bench(work, 100_000, 128, 3, 100, 3.0, args.repeat)
        if (args.big or args.only_big) and not args.scale:
            bench_big(work)
    finally:
        if not args.dir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

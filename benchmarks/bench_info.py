"""`ecpfs-viewer info URL` as a user runs it (a fresh process, start-up included) over a slow host.

The benchmark index is served by benchmarks/_remote_server.py (a child process, no folder
listings, a fixed delay per request). Each variant runs a few times; the figures are wall time
and the requests the server answered. The goal from the issue: `info` within 4 s at 50 ms.
Figures only; nothing passes or fails.

    .venv/bin/python benchmarks/bench_info.py [--delay-ms 50] [--runs 3] [--index PATH]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench_index import bench_index_path
from _remote_server import serve_static_child

REPO = Path(__file__).resolve().parents[1]
VARIANTS = {"info": [], "info --leaf-sizes": ["--leaf-sizes"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--delay-ms", type=float, default=50.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--index", type=Path, help="an index folder (default: the cached benchmark index)")
    args = parser.parse_args()
    index = (args.index or bench_index_path()).resolve()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    with serve_static_child(index.parent, args.delay_ms / 1000) as server:
        url = f"{server.base}/{index.name}"
        for name, extra in VARIANTS.items():
            seconds, requests = [], 0
            for _ in range(args.runs):
                before, started = server.requests(), time.perf_counter()
                done = subprocess.run([sys.executable, "-m", "ecpfs_viewer", "info", url, *extra], cwd=REPO, env=env,
                                      capture_output=True, text=True, timeout=600)
                seconds.append(time.perf_counter() - started)
                requests = server.requests() - before
                if done.returncode != 0:
                    print(f"{name}: exit {done.returncode}: {done.stderr.strip()}", file=sys.stderr)
            print(f"{name:<20} median {statistics.median(seconds):6.2f} s  min {min(seconds):6.2f} s  "
                  f"{requests:>6} requests  ({args.runs} runs, {args.delay_ms:g} ms per request)")


if __name__ == "__main__":
    main()

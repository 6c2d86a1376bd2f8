"""`check --deep` on a store that another process rewrites while it is read (issue 34: "a store
rewritten by another process while read" was once killed at 4 GiB): files truncated, given random
bodies or put back, leaf folders renamed away and back. Every run ends with an answer (exit 0, 1
or 2, one message or a report, never a traceback) and the process stays within the CLI's bound
(peak RSS under 300 MB, address space limited to 1 GiB as every hostile test)."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from index_factory import build_clustered_index
from locations import REPO

PEAK_MB = 300  # the CLI's bound in issue 34
RUNS = 6  # check --deep runs in the child, one after another, while the writer works
WRITER_STEPS = 4_000  # the writer stops by itself after this many changes (or when the child ends)

# runs `check --deep STORE` RUNS times in one limited process; one JSON line per run, then its peak RSS
_CHILD = """
import contextlib, io, json, resource, sys, traceback
limit = 1024 << 20
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
sys.path.insert(0, sys.argv[3])
from ecpfs_viewer.cli import main
for _ in range(int(sys.argv[2])):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(["check", "--deep", "--quiet", sys.argv[1]])
        except BaseException:
            code, _ = None, err.write(traceback.format_exc())
    print(json.dumps({"code": code, "stdout": out.getvalue()[-3000:], "stderr": err.getvalue()[-3000:]}), flush=True)
try:  # this process's own peak: ru_maxrss starts from the parent's high-water mark (kept across exec)
    with open("/proc/self/status") as status:
        peak_kb = int(next(line for line in status if line.startswith("VmHWM:")).split()[1])
except OSError:  # no /proc: ru_maxrss, an upper bound
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"peak_kb": peak_kb}), flush=True)
"""


def _rewrite(store: Path, pristine: Path, stop: threading.Event, seed: int) -> int:
    """Change the store until told to stop (or WRITER_STEPS changes): truncate a file, give it a
    random body, put it back as it was, rename a leaf folder away and back. The number of changes."""
    rng = random.Random(seed)
    files = sorted(p.relative_to(pristine) for p in pristine.rglob("*") if p.is_file())
    leaves = sorted(p.relative_to(pristine) for p in pristine.glob("lvl_*/node_*") if p.is_dir())
    step = 0
    while not stop.is_set() and step < WRITER_STEPS:
        step += 1
        target = store / rng.choice(files)
        action = rng.random()
        try:
            if action < 0.3:
                data = (pristine / target.relative_to(store)).read_bytes()
                target.write_bytes(data[: rng.randrange(len(data) + 1)])
            elif action < 0.5:
                target.write_bytes(rng.randbytes(rng.randrange(1, 1 << 16)))
            elif action < 0.65:  # another file's body: a document or chunk of another shape or kind
                shutil.copyfile(pristine / rng.choice(files), target)
            elif action < 0.85:
                shutil.copyfile(pristine / target.relative_to(store), target)
            else:
                leaf = store / rng.choice(leaves)
                away = leaf.with_name(leaf.name + "_away")
                os.rename(leaf, away)
                os.rename(away, leaf)
        except OSError:
            pass  # a folder renamed away at this moment: the next change
    return step


@pytest.mark.parametrize("seed", [34, 35])
def test_check_deep_on_a_store_rewritten_while_read_is_bounded_and_answers(tmp_path: Path, seed: int) -> None:
    pristine = build_clustered_index(tmp_path, items=600, dim=8, clusters=6)
    store = tmp_path / "rewritten.zarr"
    shutil.copytree(pristine, store)
    stop = threading.Event()
    steps: list[int] = []
    writer = threading.Thread(target=lambda: steps.append(_rewrite(store, pristine, stop, seed)), daemon=True)
    writer.start()
    try:
        done = subprocess.run([sys.executable, "-c", _CHILD, str(store), str(RUNS), str(REPO)], capture_output=True,
                              text=True, timeout=300, env={**os.environ, "MALLOC_ARENA_MAX": "2"})
    finally:
        stop.set()
        writer.join(timeout=30)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == RUNS + 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert steps and steps[0] > 0  # the store did change while it was read
    for run in lines[:-1]:
        where = json.dumps(run)[:3000]
        assert run["code"] in (0, 1, 2), where
        assert "Traceback" not in run["stdout"] + run["stderr"] and "MemoryError" not in run["stderr"], where
        assert len(run["stderr"].strip().splitlines()) <= 1, where  # one message, or none (a report)
    peak_mb = lines[-1]["peak_kb"] / 1024
    print(f"check --deep under concurrent rewrite: peak RSS {peak_mb:.0f} MB over {RUNS} runs, {steps[0]} changes")
    assert peak_mb < PEAK_MB, peak_mb

"""A zip of 700,000 members (issue 34): `info`, `check` and the window on it, peak resident memory and
wall time of each, beside the floor (reading the file once, python's zipfile opening it).

The zip is an index (two_clusters from the tests' data, or --index) with the source dataset
stored inside it, as upstream's own tests lay it out: `dataset/`, one tiny chunk per row, so
nearly every member is a few bytes and the central directory is most of the archive. It is
written by hand (stored members, ZIP64 end records past 65,535 members), in seconds, and kept in
the benchmark cache.

    PYTHONPATH=$PWD .venv-newest/bin/python benchmarks/bench_zip.py [--members 700000] [--no-gui]
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import subprocess
import sys
import time
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CACHE = Path(os.environ.get("ECPFS_BENCH_CACHE") or HERE / ".cache")
TWO_CLUSTERS = ROOT / "tests" / "data" / "two_clusters.zarr"


def write_stored_zip(target: Path, members: Iterable[tuple[str, bytes]]) -> int:
    """Write members (name, data) uncompressed into a new zip at target; how many were written.

    ZIP64 end records are written when the count or an offset needs them, as zipfile does; the
    members themselves stay small (no ZIP64 extra fields)."""
    central = bytearray()
    count = 0
    with open(target, "wb") as file:
        offset = 0
        for name, data in members:
            raw = name.encode()
            crc = zlib.crc32(data)
            local = struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 0, 0, 0x21, crc, len(data), len(data),
                                len(raw), 0)
            file.write(local + raw + data)
            central += struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, 0, 0, 0x21, crc, len(data),
                                   len(data), len(raw), 0, 0, 0, 0, 0o644 << 16, min(offset, 0xFFFFFFFF)) + raw
            offset += len(local) + len(raw) + len(data)
            count += 1
        file.write(central)
        end = offset + len(central)
        if count >= 0xFFFF or offset >= 0xFFFFFFFF:
            file.write(struct.pack("<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, count, count, len(central), offset))
            file.write(struct.pack("<4sLQL", b"PK\x06\x07", 0, end, 1))
        file.write(struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, min(count, 0xFFFF), min(count, 0xFFFF),
                               min(len(central), 0xFFFFFFFF), min(offset, 0xFFFFFFFF), 0))
    return count


def index_with_dataset(index: Path, rows: int) -> Iterator[tuple[str, bytes]]:
    """The files of the index folder, then a `dataset` array of `rows` x 2 uint32, one chunk per row."""
    for path in sorted(index.rglob("*")):
        if path.is_file():
            yield path.relative_to(index).as_posix(), path.read_bytes()
    document = {"zarr_format": 3, "node_type": "array", "shape": [rows, 2], "data_type": "uint32",
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1, 2]}},
                "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
                "fill_value": 0, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
                "attributes": {}}
    yield "dataset/zarr.json", json.dumps(document).encode()
    for row in range(rows):
        yield f"dataset/c/{row}/0", struct.pack("<2L", row, row + 1)


def many_member_zip(members: int, index: Path = TWO_CLUSTERS, folder: Path = CACHE) -> Path:
    """The cached zip of `members` members (the index's files and the dataset's rows), written on first use."""
    files = sum(1 for path in index.rglob("*") if path.is_file())
    target = folder / f"zip_{members}_{index.name}.zip"
    if not target.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".part")
        write_stored_zip(partial, index_with_dataset(index, members - files - 1))
        partial.replace(target)
    return target


def measure(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, int, int]:
    """(wall seconds, peak resident MB, exit code) of a child process."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env={**os.environ, **(env or {})})
    _pid, status, usage = os.wait4(child.pid, 0)
    return time.perf_counter() - started, usage.ru_maxrss // 1024, os.waitstatus_to_exitcode(status)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", type=int, default=700_000)
    parser.add_argument("--index", type=Path, default=TWO_CLUSTERS, help="the index folder put in the zip")
    parser.add_argument("--no-gui", action="store_true", help="leave out the window")
    args = parser.parse_args()
    started = time.perf_counter()
    # written by a child: a child's peak resident memory starts from its parent's (ru_maxrss), so
    # this process stays small for the figures below
    subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); import bench_zip; "
                    "from pathlib import Path; bench_zip.many_member_zip(int(sys.argv[2]), Path(sys.argv[3]))",
                    str(HERE), str(args.members), str(args.index)], check=True)
    archive = many_member_zip(args.members, args.index)
    print(f"{archive} ({archive.stat().st_size / 1e6:.0f} MB, {args.members:,} members), "
          f"ready in {time.perf_counter() - started:.1f} s; load {os.getloadavg()[0]:.1f}")
    python = sys.executable
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "QT_QPA_PLATFORM": "offscreen", "ECPFS_VIEWER_CACHE": str(CACHE / "zip_viewer_cache")}
    screenshot = CACHE / "zip_window.png"
    jobs = [
        ("floor: cat the file", ["cat", str(archive)], {}),
        ("floor: zipfile.ZipFile opens it", [python, "-c", "import sys, zipfile; zipfile.ZipFile(sys.argv[1])",
                                             str(archive)], {}),
        ("ecpfs-viewer info", [python, "-m", "ecpfs_viewer", "info", str(archive)], env),
        ("ecpfs-viewer check", [python, "-m", "ecpfs_viewer", "check", str(archive)], env),
    ]
    if not args.no_gui:
        jobs.append(("the window (--screenshot)", [python, "-m", "ecpfs_viewer", str(archive), "--screenshot",
                                                   str(screenshot)], env))
    for label, argv, extra in jobs:
        seconds, peak_mb, code = measure(argv, extra)
        print(f"{label:<36} {seconds:7.2f} s  {peak_mb:6,} MB peak  exit {code}")


if __name__ == "__main__":
    main()

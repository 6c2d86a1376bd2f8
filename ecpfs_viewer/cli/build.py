"""`ecpfs-viewer build`: the builder on a terminal.

Registered by ``cli/__init__.py``. Each problem is one ``ecpfs-viewer: error:`` line on stderr and nothing
is written. Exit status as in `cli.contract`: 2 when the build cannot start (a usage error or bad
parameter, an input that cannot be opened, an output that exists or cannot be written, a size
that needs --force), 1 when the input opens but its data cannot be built (NaN, wrong shape,
truncated), 130 for Ctrl+C and 128 + N for another stop signal N.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from ecpfs_viewer.cli.commands import add_command
from ecpfs_viewer.cli.contract import (
    EXIT_CANNOT_START,
    EXIT_FAILED,
    EXIT_OK,
    PREFIX,
    Interrupted,
    UsageError,
    unusable_file,
)
from ecpfs_viewer.cli.numbers import AtLeast
from ecpfs_viewer.cli.progress import TerminalProgress
from ecpfs_viewer.model.blas import scan_libraries
from ecpfs_viewer.model.build.builder import (
    BuildCancelled,
    BuildError,
    BuildParams,
    BuildProblem,
    BuildResult,
    build_index,
    preview_build,
)
from ecpfs_viewer.model.ecpfs.paths import level_path
from ecpfs_viewer.model.ecpfs.sizing import DTYPE_CHOICES


def _err(message: str) -> None:
    print(PREFIX + message, file=sys.stderr)


# ------------------------------------------------------------------------------------ build


def add_build_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Register `build INPUT OUTPUT [options]`."""
    p = add_command(subparsers, "build")
    p.add_argument("input", metavar="INPUT", help=".npy file or store.zarr#array/path")
    p.add_argument("output", metavar="OUTPUT", help="index directory to create (e.g. index.zarr)")
    p.add_argument("--levels", action=AtLeast, least=1, default=3, help="node levels below the root (default 3)")
    p.add_argument("--target-cluster-items", action=AtLeast, least=1, default=100,
                   help="average leaf size to aim for (default 100)")
    p.add_argument("--metric", choices=("L2", "IP"), type=str.upper, default="L2")
    p.add_argument("--dtype", choices=DTYPE_CHOICES, default="native",
                   help="stored embedding type (default: the input's, float64 -> float32)")
    p.add_argument("--rep-selection", choices=("offset", "random"), default="offset")
    p.add_argument("--seed", action=AtLeast, least=0, default=None, help="seed for --rep-selection random")
    p.add_argument("--normalized", action="store_true", help="promise that vectors are unit length")
    p.add_argument("--overwrite", action="store_true", help="replace OUTPUT if it is an existing store")
    p.add_argument("--force", action="store_true",
                   help="build even when the index would be unusually large for its input "
                        "(over 4 times the input and 256 MiB on disk)")
    p.add_argument("--node-chunk-kb", action=AtLeast, least=1, default=512,
                   help="node chunk budget in KiB (default 512)")
    p.add_argument("--rep-chunk-mb", action=AtLeast, least=1, default=8,
                   help="representative chunk budget in MiB (default 8)")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no summary")
    p.set_defaults(func=run_build)
    return p


class _Interrupted(KeyboardInterrupt):
    """A termination signal arrived during a build; the builder cleans up as for Ctrl+C."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


#: Signals that end a build the way Ctrl+C does: the temporary folder is removed, then the exit.
_STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


class _StopRequest:
    """The stop signal that arrived, if any, and the build's cancel event it sets."""

    def __init__(self) -> None:
        self.cancel = threading.Event()
        self.signum: int | None = None


@contextmanager
def _stop_signals_interrupt() -> Iterator[_StopRequest]:
    """SIGTERM, SIGHUP (and SIGINT) raise :class:`_Interrupted` in the build; later ones wait for the clean-up.

    The handler also sets the build's cancel event: a raise that lands inside a ctypes callback
    (threadpoolctl's library scan) is printed and swallowed by Python, and the build's next
    checkpoint must stop it all the same.
    """
    request = _StopRequest()
    if threading.current_thread() is not threading.main_thread():
        yield request
        return

    def stop(signum: int, frame: FrameType | None) -> None:
        for s in _STOP_SIGNALS:
            signal.signal(s, signal.SIG_IGN)  # a second signal must not cut the clean-up short
        request.signum = signum
        request.cancel.set()
        raise _Interrupted(signum)

    previous = {s: signal.signal(s, stop) for s in _STOP_SIGNALS}
    try:
        yield request
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _stopped_by(signum: int, complete: str | None) -> int:
    """Say which signal stopped the build and what it left; the exit status a shell expects."""
    written = f"the index was complete: {complete}" if complete is not None else "nothing was written"
    _err(f"build stopped by {signal.Signals(signum).name}; {written}")
    return 128 + signum


def run_build(args: argparse.Namespace) -> int:
    """Build the index; each problem with the input, parameters or output is one line on stderr."""
    params = BuildParams(
        levels=args.levels, target_cluster_items=args.target_cluster_items, metric=args.metric,
        is_normalized=args.normalized, dtype=args.dtype, rep_selection=args.rep_selection,
        seed=args.seed, node_chunk_bytes=args.node_chunk_kb * 1024,
        rep_chunk_bytes=args.rep_chunk_mb * 1024 * 1024,
    )
    if not args.force:
        preview = preview_build(args.input, params, args.output, overwrite=args.overwrite)
        if preview.ok and preview.oversize:
            raise UsageError(f"{preview.oversize}; pass --force to build it anyway")
    bar = TerminalProgress(enabled=not args.quiet)
    logs: list[str] = []
    result: BuildResult | None = None
    stop: _StopRequest | None = None
    try:
        scan_libraries()  # threadpoolctl's scan runs ctypes callbacks, where a stop signal's raise is lost
        with bar, _stop_signals_interrupt() as stop:
            result = build_index(args.input, args.output, params, overwrite=args.overwrite,
                                 progress=bar, cancel=stop.cancel, log=logs.append)
    except BuildError as exc:
        for problem in exc.problems:
            _err(str(problem))
        return max(_problem_code(problem, args.input) for problem in exc.problems)
    except _Interrupted as exc:
        return _stopped_by(exc.signum, args.output if result is not None else None)
    except BuildCancelled:  # the signal's raise was swallowed; the checkpoint saw its cancel event
        if stop is None or stop.signum is None:
            raise Interrupted("build interrupted; nothing was written") from None
        return _stopped_by(stop.signum, None)
    except KeyboardInterrupt:
        raise Interrupted("build interrupted; nothing was written") from None
    except Exception as exc:
        if stop is not None and stop.signum is not None:
            # the signal's raise landed inside a lock's wait, whose clean-up then failed ("release
            # unlocked lock") and replaced it: still the signal's stop; the builder removed its folder
            return _stopped_by(stop.signum, args.output if result is not None else None)
        if isinstance(exc, OSError):
            _err(f"{args.output}: {exc.strerror or exc}")
            return EXIT_FAILED
        raise
    if not args.quiet:
        print(format_build_summary(result))
    return EXIT_OK


def _problem_code(problem: BuildProblem, input_location: str) -> int:
    """2 for a problem that stops the build before it reads data (a parameter, the output, an input
    that cannot be opened), 1 for input data that cannot be built."""
    if problem.field != "input":
        return EXIT_CANNOT_START
    path = input_location.split("#", 1)[0]
    if "#" in input_location:  # store.zarr#array: the store is a folder (or a zip)
        return EXIT_CANNOT_START if not os.path.exists(path) or not os.access(path, os.R_OK) else EXIT_FAILED
    return EXIT_CANNOT_START if unusable_file(path) else EXIT_FAILED


def format_build_summary(result: BuildResult) -> str:
    """What was built: the `info` view of the new index, then the build's own figures."""
    lines = [f"Built {result.output} in {result.seconds:.2f} s"]
    for w in result.warnings:
        lines.append(f"  warning: {w}")
    info_text = _info_text(result.output)
    if info_text:
        lines.append(info_text)
    else:
        lines += [
            f"Levels: {result.levels}", f"Metric: {result.metric}",
            f"Normalized: {str(result.is_normalized).lower()}", f"Total Items: {result.rows}",
            f"Total Representatives: {result.representatives}",
            f"Dimension: {result.dim}  stored dtype: {result.stored_dtype}  fan-out: {result.fan_out}",
            "Nodes per level: " + ", ".join(f"{level_path(i)}={n}" for i, n in enumerate(result.nodes_per_level, 1)),
        ]
    return "\n".join(lines)


def _info_text(path: Path) -> str | None:
    """The `ecpfs-viewer info` text, when that module is available."""
    try:
        from ecpfs_viewer.cli.read import collect_level_stats, format_info
        from ecpfs_viewer.model.ecpfs import summarize
        from ecpfs_viewer.model.ecpfs.opened_index import open_index

        h = open_index(str(path)).hierarchy
        summary = summarize(h)
        return format_info(summary, collect_level_stats(h, summary))
    except Exception:
        return None

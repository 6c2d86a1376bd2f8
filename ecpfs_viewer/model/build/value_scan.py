"""The input's values checked for NaN and infinity before a build, as the builder checks each batch.

The Build dialog runs it in a worker as soon as the input is chosen, so a .npy that holds NaN is
named (with its first bad row) before Build is pressed instead of failing the build; the builder
keeps its own check of every batch (a file can change between the two).
"""

from __future__ import annotations

import os
import threading

from ecpfs_viewer.model.build.errors import BuildCancelled, BuildError, BuildProblem
from ecpfs_viewer.model.build.sources import EmbeddingSource, check_finite
from ecpfs_viewer.model.tasks import Counted, ProgressCallback, checkpoint


def scan_values(source: str | os.PathLike[str], progress: ProgressCallback | None = None,
                cancel: threading.Event | None = None) -> BuildProblem | None:
    """The first row of ``source`` holding NaN or infinity as the builder would word it, else None
    (an input that cannot be read: the problem the builder would give). BuildCancelled when asked."""
    try:
        reader = EmbeddingSource(source)
        rows = reader.info.rows
        for start, batch in reader.batches():
            checkpoint(cancel, BuildCancelled)
            check_finite(batch, start, reader.label)
            if progress is not None:
                progress(Counted(min(start + len(batch), rows), rows, "checking the values"))
    except BuildError as exc:
        return exc.problems[0] if exc.problems else BuildProblem("input", str(exc))
    return None

"""Sizes of the files below a local folder (chunk statistics of a local store), walked without
following a link back up the tree."""

from __future__ import annotations

import os


def local_sizes(top: str, problems: list[str] | None = None) -> dict[str, int]:
    """Size of every file below a directory, keyed by '/'-joined relative path.

    A folder that cannot be listed below `top`, or an entry that cannot be examined (a dangling or
    looping link), is left out and described in `problems` (when given); an unlistable `top` raises.
    Linked folders are followed once: a link back up the tree is a loop, not an endless walk.
    """
    sizes: dict[str, int] = {}
    seen: set[tuple[int, int]] = set()
    stack = [("", top)]
    while stack:
        rel, directory = stack.pop()
        try:
            with os.scandir(directory) as listing:
                entries = list(listing)
            info = os.stat(directory)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            if not rel or problems is None:
                raise
            problems.append(f"{rel}: cannot list ({exc.strerror or exc})")
            continue
        if (info.st_dev, info.st_ino) in seen:
            if problems is not None:
                problems.append(f"{rel}: a link to a folder already listed (a loop); skipped")
            continue
        seen.add((info.st_dev, info.st_ino))
        for entry in entries:
            name = f"{rel}/{entry.name}" if rel else entry.name
            try:
                if entry.is_dir():
                    stack.append((name, entry.path))
                else:
                    sizes[name] = entry.stat().st_size
            except OSError as exc:
                if problems is not None:
                    problems.append(f"{name}: cannot examine ({exc.strerror or exc})")
    return sizes

"""One grammar for the node paths a user types or passes: Go to Path, ``--select``, links.

A node path names a group or array from the root down: ``lvl_3/node_812/embeddings``. Blanks
around it, slashes before and after it and repeated slashes are dropped (``//lvl_1//node_2/``
is ``lvl_1/node_2``); the root is ``""`` (or ``/``). A part that cannot be a node's name is
refused in words before anything walks the tree: ``.`` and ``..`` (Zarr v3 forbids them as
names; a path here only goes down) and control characters.
"""

from __future__ import annotations

from ecpfs_viewer.model.errors import UserError


class NodePathError(UserError, ValueError):
    """A typed path that cannot name a node; the message says which part and why."""


def parse_node_path(text: str) -> str:
    """``text`` as the tree names the node: parts joined by single slashes, no outer slashes.

    Raises NodePathError for a part ``.`` or ``..`` or one holding a control character."""
    parts = [part for part in text.strip().split("/") if part]
    for part in parts:
        if part in (".", ".."):
            raise NodePathError(f"{_shown(text)}: {part!r} is not a node name; a path goes down from the root, "
                                "e.g. lvl_1/node_2")
        if any(ord(char) < 32 or ord(char) == 127 for char in part):
            raise NodePathError(f"{_shown(text)}: a node name holds no control characters")
    return "/".join(parts)


def _shown(text: str, limit: int = 60) -> str:
    """The typed text quoted for a message, cut short when long."""
    text = text.strip()
    return repr(text if len(text) <= limit else text[:limit] + "…")

"""Which folders this app may delete: an ecpfs index, recognised by its layout, and nothing else.

`build --overwrite`, the Build window's "replace" and a tune's clean-up all remove folders; each asks
:func:`replace_refusal` first, so a folder that holds anything an ecpfs index does not (a note, a
link, a Zarr array of the user's, a folder that is only a Zarr group) is never removed, and the
refusal names what was found. The check reads names only (no file is opened) and never follows a
link; removal (:func:`remove_index`) never follows one either.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

#: Files an operating system's file browser drops in any folder; never anyone's work.
_BROWSER_LITTER = frozenset({".DS_Store", "Thumbs.db", "desktop.ini"})
_NAME = re.compile(r"^[A-Za-z0-9_]+$")
_LEVEL = re.compile(r"^lvl_\d+$")
_NODE = re.compile(r"^node_\d+$")
_DIGITS = re.compile(r"^\d+$")
_NODE_ARRAYS = frozenset({"embeddings", "node_ids", "item_ids", "border"})

#: What a folder member must be: ("group", rule for its children) or ("array", None).
_Rule = Callable[[str], "str | None"]


def _root_child(name: str) -> str | None:
    if name in ("info", "index_root", "queries") or _LEVEL.match(name):
        return "group"
    if name in ("rep_embeddings", "rep_item_ids"):
        return "array"
    return None


def _child_rule(group_rel: str) -> _Rule:
    """What the members of the group at ``group_rel`` may be ("group", "array" or None: foreign)."""
    parts = group_rel.split("/")
    top = parts[0]
    if top == "info" and len(parts) == 1:
        return lambda name: "array" if _NAME.match(name) else None
    if top == "index_root" and len(parts) == 1:
        return lambda name: "array" if name == "embeddings" else None
    if _LEVEL.match(top) and len(parts) == 1:
        return lambda name: "group" if _NODE.match(name) else None
    if _LEVEL.match(top) and len(parts) == 2:
        return lambda name: "array" if name in _NODE_ARRAYS else None
    if top == "queries" and len(parts) == 1:
        return lambda name: "group" if _NAME.match(name) else None
    if top == "queries" and len(parts) == 2:
        return lambda name: "array" if _NAME.match(name) else None
    return lambda name: None


def _first_inside(path: str, rel: str) -> str:
    """The first file under a foreign folder (what the user will recognise), else the folder itself."""
    try:
        with os.scandir(path) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return rel
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            return _first_inside(entry.path, f"{rel}/{entry.name}")
        return f"{rel}/{entry.name}"
    return rel


def _entries(path: str) -> list[os.DirEntry[str]]:
    with os.scandir(path) as it:
        return sorted(it, key=lambda e: e.name)


def _chunk_tree_foreign(path: str, rel: str) -> str | None:
    """The first member of an array's ``c`` folder that is not a chunk (``<digits>/.../<digits>``)."""
    stack = [(path, rel)]
    while stack:
        folder, folder_rel = stack.pop()
        for entry in _entries(folder):
            sub = f"{folder_rel}/{entry.name}"
            if not _DIGITS.match(entry.name) or entry.is_symlink():
                return sub
            if entry.is_dir(follow_symlinks=False):
                stack.append((entry.path, sub))
            elif not entry.is_file(follow_symlinks=False):
                return sub
    return None


def _array_foreign(path: str, rel: str) -> str | None:
    for entry in _entries(path):
        sub = f"{rel}/{entry.name}"
        if entry.is_symlink():
            return sub
        if entry.name == "zarr.json" and entry.is_file(follow_symlinks=False):
            continue
        if entry.name == "c" and entry.is_file(follow_symlinks=False):
            continue
        if entry.name == "c" and entry.is_dir(follow_symlinks=False):
            found = _chunk_tree_foreign(entry.path, sub)
            if found is not None:
                return found
            continue
        return _first_inside(entry.path, sub) if entry.is_dir(follow_symlinks=False) else sub
    return None


def _group_foreign(path: str, rel: str, rule: _Rule) -> str | None:
    for entry in _entries(path):
        sub = f"{rel}/{entry.name}" if rel else entry.name
        if entry.is_symlink():
            return sub
        if entry.is_file(follow_symlinks=False) and (entry.name == "zarr.json" or entry.name in _BROWSER_LITTER):
            continue
        kind = rule(entry.name) if entry.is_dir(follow_symlinks=False) else None
        if kind is None:
            return _first_inside(entry.path, sub) if entry.is_dir(follow_symlinks=False) else sub
        found = (_array_foreign(entry.path, sub) if kind == "array"
                 else _group_foreign(entry.path, sub, _child_rule(sub)))
        if found is not None:
            return found
    return None


def foreign_member(folder: str | os.PathLike[str]) -> str | None:
    """The first member of ``folder`` (relative path) that is not part of an ecpfs index, or None.

    An ecpfs index holds only ``zarr.json`` documents, chunk files under an array's ``c``, and the
    groups and arrays of the format (``info/*``, ``rep_*``, ``index_root/embeddings``,
    ``lvl_N/node_M/{embeddings, node_ids, item_ids, border}``, ``queries/Q/*``). Links are foreign.
    """
    return _group_foreign(os.fspath(folder), "", _root_child)


def replace_refusal(folder: str | os.PathLike[str]) -> str | None:
    """Why the existing ``folder`` must not be replaced by a new index, or None when it may be.

    It may be when it is empty, or an ecpfs index with nothing of anyone's beside (see
    :func:`foreign_member`). The reason is a sentence about ``folder``'s contents, to follow its path.
    """
    path = os.fspath(folder)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be looked into ({exc.strerror}); not replaced"
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link; only a folder holding an ecpfs index is replaced"
    if not stat.S_ISDIR(st.st_mode):
        return "exists and is not a folder; not replaced"
    try:
        names = [name for name in os.listdir(path) if name not in _BROWSER_LITTER]
        found = foreign_member(path)
    except OSError as exc:
        return f"cannot be looked into ({exc.strerror}); not replaced"
    if found is not None:
        return f"holds {found}, which is not part of an ecpfs index; not replaced"
    if names and not any(_root_child(name) == "group" and name != "queries" for name in names):
        return ("holds no ecpfs index (no info/, index_root or lvl_N folder), only "
                f"{', '.join(sorted(names))}; not replaced")
    return None


def remove_index(folder: str | os.PathLike[str]) -> bool:
    """Remove ``folder`` when :func:`replace_refusal` allows it (links are removed, never followed);
    True when it is gone."""
    path = Path(folder)
    if replace_refusal(path) is not None:
        return False
    shutil.rmtree(path, ignore_errors=True)
    return not os.path.lexists(path)

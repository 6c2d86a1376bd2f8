"""A group of many children (the 40,000 leaves of a 2,000,000-item index) shows them in ranges.

QTreeView lays out every row of an expanded group again on each insert, removal or reset below
it, with one ``index`` and one ``hasChildren`` call into Python per row: 40,000 rows under one
expanded level cost a 200-400 ms pause each time, whatever the model does. So a group with more
than :data:`LARGE_GROUP` children gets one row per :data:`RANGE_ROWS` of them ("0 … 249",
"250 … 499"), each holding its children, as HDFView pages a large group and debuggers split a long
array: a layout walks the ranges and the rows of the ranges the user expanded, never the whole
level. A range row stands for its group (its path is the group's: selecting it shows the level's
page); every node row is still in the model's path map, so a reveal or a mark finds it, and
selecting it expands its range.
"""

from __future__ import annotations

import re

from ecpfs_viewer.gui.tree.tree_item import LoadState, TreeItem

#: children from which a group is shown in ranges
LARGE_GROUP = 5000
#: children per range: expanding one (a node revealed in it) lays out its rows, three calls into
#: Python a row, each waiting for the interpreter while workers run (1,000 rows: 3,300 calls,
#: 175-280 ms at 2M); 250 make 160 ranges of a 40,000-node level, about 900 calls either way
RANGE_ROWS = 250


def in_ranges(owner: TreeItem, rows: list[TreeItem], large: int = LARGE_GROUP,
              size: int = RANGE_ROWS) -> list[TreeItem]:
    """The rows to put under owner: rows themselves, or (over large) ranges of size rows holding them."""
    if len(rows) <= large:
        return rows
    ranges = []
    for number, start in enumerate(range(0, len(rows), size)):
        part = rows[start:start + size]
        span = TreeItem(owner.path, range_name(part[0].name, part[-1].name), owner.kind, owner, number)
        span.ranged = True
        span.state = LoadState.LISTED
        span.detail = f"{len(part):,} children"
        for row, child in enumerate(part):
            child.parent, child.row = span, row
        span.children = part
        ranges.append(span)
    return ranges


def range_name(first: str, last: str) -> str:
    """'1000 … 1249' for node_1000 … node_1249: without the prefix both share, as debuggers name the
    ranges of a long array, so the name fits a narrow tree pane (the tooltip gives the full names)."""
    prefix = re.match(r"\D*", first)
    shared = prefix.group() if prefix is not None else ""
    if shared and last.startswith(shared):
        return f"{first[len(shared):]} … {last[len(shared):]}"
    return f"{first} … {last}"


def range_tooltip(span: TreeItem) -> str:
    """'/lvl_3: node_1000 … node_1249 (250 rows)': the group a range row stands for, and its rows."""
    first, last = span.children[0].name, span.children[-1].name
    return f"/{span.path}: {first} … {last} ({len(span.children):,} rows)"

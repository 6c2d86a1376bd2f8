"""The node page's rich text: the facts grid, the breadcrumb, links, and reading them back as plain text.

Pure functions of what the model read (no widgets), so the page's wording can be read and tested
apart from its layout.
"""

from __future__ import annotations

import html
import re

from ecpfs_viewer.model.ecpfs.nodes import Breadcrumb
from ecpfs_viewer.model.views.node_info import NodeInfo


def link(path: str, text: str | None = None) -> str:
    return f'<a href="{html.escape(path)}">{html.escape(text or path)}</a>'


def fact_rows(info: NodeInfo) -> list[tuple[str, str]]:
    """(label, rich text) rows of the facts grid; paths are links."""
    rows: list[tuple[str, str]] = [("Node", html.escape(info.ref.path))]
    kind = "unknown" if info.is_leaf is None else "leaf (holds items)" if info.is_leaf else "internal (leads nodes)"
    rows.append(("Level", f"{info.ref.level}" + ("" if info.ref.is_root else f", node id {info.ref.node_id}")
                 + f" · {kind}"))
    if not info.exists:
        rows.append(("Exists", "no: see the findings"))
    elif info.embeddings != "readable":
        rows.append(("Exists", f"exists; embeddings {info.embeddings}: see the findings"))
    if info.rows is not None:
        size = f"{info.rows:,} rows"
        if info.relative_size is not None and info.level_median:
            size += f" · {info.relative_size:.2f} x the level's median ({info.level_median:,.0f} rows, " \
                    f"{info.level_nodes:,} nodes)"
        rows.append(("Size", size))
    if info.dim is not None:
        rows.append(("Vectors", f"{info.dim} dimensions, {html.escape(info.dtype or '?')}"))
    rep = info.representative
    if rep is not None:
        parent = "index_root/embeddings" if rep.parent.is_root else f"{rep.parent.path}/embeddings"
        text = f"row {rep.row} of {link(parent)}"
        if rep.item_id is not None:
            text += f" · item id {rep.item_id:,} (rep_item_ids[{rep.rep_row:,}])"
        elif rep.note:
            text += f" · item id unknown: {html.escape(rep.note)}"
        rows.append(("Representative", text))
    if info.chunk_use is not None:
        use = info.chunk_use
        share = "" if use.fraction is None else f" ({use.fraction:.1%} used)" if use.fraction < 0.1 else \
            f" ({use.fraction:.0%} used)"
        rows.append(("Chunk use", f"{use.rows:,} rows in {use.chunks:,} chunk{'s' if use.chunks != 1 else ''} "
                                  f"of {use.chunk_rows:,} rows{share}"))
    return rows


def crumb_html(crumbs: Breadcrumb) -> str:
    """index > lvl_1/node_3 > lvl_2/node_50 > ..., each known node a link (the last one plain)."""
    parts = []
    for i, crumb in enumerate(crumbs.crumbs):
        last = i == len(crumbs.crumbs) - 1
        if crumb.ref is None:
            tip = html.escape(crumb.finding.message) if crumb.finding else "unknown"
            parts.append(f'<span title="{tip}">?</span>')
        elif last:
            parts.append(f"<b>{html.escape(crumb.label)}</b>")
        else:
            parts.append(link("/" if crumb.ref.is_root else crumb.ref.path, crumb.label))
    return " &gt; ".join(parts)


def plain_text(text: str) -> str:
    """Rich text as read: tags removed, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", text.replace("<br>", "\n")))


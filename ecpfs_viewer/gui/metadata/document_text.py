"""What the metadata panel shows of a node's documents, prepared off the GUI thread and cut.

A zarr.json may hold a 50 MB attribute: formatting it, putting it in a text view and colouring
it would stall the window (and take gigabytes). The panel's background job reads the node's
details and prepares its texts here, each cut to a size a text view handles at once, with the
full size said; the whole text is made (again in the background) only when the user asks.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from ecpfs_viewer.model.errors import MetadataError
from ecpfs_viewer.model.formatting import format_bytes
from ecpfs_viewer.model.guarded_json import parse_json
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy
from ecpfs_viewer.model.zarrtree.nodes import NodeDetails, NodeKind

#: Characters of a document the raw view shows before "Show all".
SHOWN_CHARS = 1 << 18
#: Characters of one attribute value in the summary.
ATTRIBUTE_CHARS = 300


def _utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", errors="replace"))


@dataclass(frozen=True)
class ShownText:
    """The start of a text, whether it was cut, and the size of the whole."""

    text: str
    total_bytes: int
    cut: bool

    @classmethod
    def of(cls, text: str, limit: int = SHOWN_CHARS) -> ShownText:
        return cls(text[:limit], _utf8_size(text), len(text) > limit)

    def describe_cut(self) -> str:
        """'Shown: the first 262,144 characters of a document of 47.7 MiB (50,000,426 bytes).'"""
        return f"Shown: the first {len(self.text):,} characters of a document of {format_bytes(self.total_bytes)} " \
               f"({self.total_bytes:,} bytes)."


def compact(value: Any, limit: int = ATTRIBUTE_CHARS) -> str:
    """One line of JSON, cut to limit characters (with its full size when cut)."""
    if isinstance(value, str) and len(value) > limit:  # not copied whole to be cut
        text = json.dumps(value[:limit], ensure_ascii=False)
        return f"{text[:limit - 1]}… ({format_bytes(_utf8_size(value) + 2)} in all)"
    text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    if len(text) <= limit:
        return text
    return f"{text[:limit - 1]}… ({format_bytes(_utf8_size(text))} in all)"


def raw_document_text(details: NodeDetails, pretty: bool) -> str:
    """The metadata exactly as stored, or pretty-printed with its key order kept (whole: slow for
    a huge document, so never on the GUI thread)."""
    node = details.node
    if node.raw is None:
        return "(this node has no metadata document: an implicit group)" if node.kind is NodeKind.IMPLICIT_GROUP \
            else "(no metadata document)"
    parts = [(node.metadata_key or "zarr.json", node.raw)]
    if node.raw_attrs:
        parts.append((".zattrs", node.raw_attrs))
    texts = []
    for name, raw in parts:
        text = raw.decode("utf-8", errors="replace")
        if pretty:
            # not JSON, or past the caps on parsing: the stored text; the error banner says why
            with contextlib.suppress(MetadataError):
                document = details.document if len(parts) == 1 and details.document is not None \
                    else parse_json(raw, name)
                text = json.dumps(document, indent=2, ensure_ascii=False)
        texts.append(text if len(parts) == 1 else f"// {name}\n{text}")
    return "\n\n".join(texts)


def _shortened(value: Any, budget: list[int]) -> Any:
    """value with every string cut to the budget of characters left and every array or object cut
    once the budget is spent: what a view of the start of a huge document needs, built without
    copying the rest."""
    budget[0] -= 1
    if isinstance(value, str):
        kept = value[:max(0, budget[0])]
        budget[0] -= len(kept)
        return kept
    if isinstance(value, list):
        items = []
        for item in value:
            if budget[0] <= 0:
                break
            items.append(_shortened(item, budget))
        return items
    if isinstance(value, dict):
        members = {}
        for key, item in value.items():
            if budget[0] <= 0:
                break
            members[key] = _shortened(item, budget)
        return members
    return value


def shown_document_text(details: NodeDetails, pretty: bool, limit: int = SHOWN_CHARS) -> ShownText:
    """The start of raw_document_text and the size of the whole, without making the whole text
    of a huge document (its stored bytes say how large it is)."""
    node = details.node
    stored = len(node.raw or b"") + len(node.raw_attrs or b"")
    if stored <= limit:
        return ShownText.of(raw_document_text(details, pretty), limit)
    assert node.raw is not None
    text = node.raw[:limit * 4].decode("utf-8", errors="ignore")[:limit]
    if pretty and not node.raw_attrs and details.document is not None:
        text = json.dumps(_shortened(details.document, [limit]), indent=2, ensure_ascii=False)[:limit]
    return ShownText(text, stored, True)


#: A text view lays a line out whole: a 50 MB line takes it most of a minute and gigabytes, while
#: the same text in lines of this many characters shows at once.
DISPLAYED_LINE_CHARS = 10_000
_LONG_LINE = re.compile(f"([^\\n]{{{DISPLAYED_LINE_CHARS}}})(?=[^\\n])")


def whole_document_text(details: NodeDetails, pretty: bool) -> tuple[str, bool]:
    """The whole raw_document_text for the view (run in the background), its lines longer than
    DISPLAYED_LINE_CHARS broken; and whether any was."""
    text = raw_document_text(details, pretty)
    broken, count = _LONG_LINE.subn("\\1\\n", text)
    return broken, count > 0


@dataclass(frozen=True)
class PanelContent:
    """A node's details with its texts ready to show: the summary's attribute rows and the raw
    document (plain and pretty-printed), each cut."""

    details: NodeDetails
    attribute_rows: list[tuple[str, str]]
    raw: dict[bool, ShownText] = field(default_factory=dict)  # by pretty-printed


def attribute_rows(details: NodeDetails) -> list[tuple[str, str]]:
    """The summary's rows for the node's attributes, each value cut to one line."""
    rows: list[tuple[str, str]] = []
    writer = details.writer
    for key, value in (details.attributes or {}).items():
        if key == "_zarrs" and isinstance(value, dict):
            description = str(value.get("description", ""))[:ATTRIBUTE_CHARS]
            rows.append(("Attribute _zarrs", f"{writer} ({description})".strip()))
        else:
            rows.append((f"Attribute {key}", compact(value)))
    if not details.attributes and details.document is None and details.node.raw is not None:
        rows.append(("Attributes", "could not be read (the message above says why)"))
    elif not details.attributes:
        rows.append(("Attributes", "none"))
    return rows


def prepare_content(hierarchy: Hierarchy, path: str) -> PanelContent:
    """The node's details and texts, for the background job behind the panel."""
    details = hierarchy.details(path)
    return PanelContent(details, attribute_rows(details),
                        {pretty: shown_document_text(details, pretty) for pretty in (True, False)})

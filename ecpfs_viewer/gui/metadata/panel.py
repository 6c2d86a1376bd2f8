"""The metadata panel: a decoded summary of the selected node, its raw zarr.json, its chunk map.

The node's details come from the hierarchy's cache and the chunk statistics from
``model.chunks.chunk_stats``, both in the background; a result for a node the user has already
left is dropped by the runner. Error nodes show their message in a banner at the top.
"""

from __future__ import annotations

import contextlib
import functools
import html
import json
from typing import Any

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QFont, QFontDatabase
from PySide6.QtWidgets import (
    QCheckBox,
    QLabel,
    QPlainTextEdit,
    QStackedWidget,
    QTabWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from ecpfs_viewer.gui.metadata.chunk_map import ChunkMapWidget
from ecpfs_viewer.gui.metadata.json_highlighter import JsonHighlighter
from ecpfs_viewer.gui.runtime.action_cost import Measured, measured
from ecpfs_viewer.gui.runtime.workers import BackgroundRunner
from ecpfs_viewer.gui.widgets.display import MessageBanner, panes, tab_page
from ecpfs_viewer.model.ecpfs.paths import is_node_array
from ecpfs_viewer.model.formatting import format_bytes, format_shape
from ecpfs_viewer.model.zarrtree.chunks import ChunkStats, chunk_stats
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy
from ecpfs_viewer.model.zarrtree.nodes import NodeDetails, NodeKind


def monospace_font() -> QFont:
    return QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)


def _compact(value: Any, limit: int = 300) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _shape(shape: tuple[int, ...] | None) -> str:
    if shape is None:
        return "—"
    return format_shape(shape)


def describe_codecs(codecs: list[dict[str, Any]]) -> list[str]:
    """One line per codec: its name and configuration, e.g. 'zstd (level: 3, checksum: false)'."""
    lines = []
    for codec in codecs:
        config = codec.get("configuration") or {}
        if isinstance(config, dict) and config:
            inner = ", ".join(f"{k}: {_compact(v, 120)}" for k, v in config.items())
            lines.append(f"{codec.get('name', '?')} ({inner})")
        else:
            lines.append(str(codec.get("name", "?")))
    return lines


def summary_rows(details: NodeDetails, stats: ChunkStats | None = None,
                 stats_error: str | None = None) -> list[tuple[str, str]]:
    """The summary as (label, text) rows; stats once the chunk statistics have been computed."""
    node = details.node
    rows: list[tuple[str, str]] = [("Path", "/" + node.path), ("Kind", node.kind.value)]
    rows.append(("Zarr format", str(node.zarr_format) if node.zarr_format else "— (no metadata)"))
    array = details.array
    if array is not None:
        rows += [("Shape", _shape(array.shape)), ("Chunk shape", _shape(array.chunk_shape))]
        if array.shard_shape is not None:
            rows.append(("Shard shape", _shape(array.shard_shape)))
        rows += [("Data type", array.dtype), ("Fill value", _compact(array.fill_value))]
        rows.append(("Codecs", "\n".join(describe_codecs(array.codecs)) or "none"))
        if array.dimension_names:
            rows.append(("Dimension names", ", ".join(str(n) for n in array.dimension_names)))
        rows.append(("Chunk key encoding", _compact(array.chunk_key_encoding)))
        logical = array.logical_bytes
        rows.append(("Logical size", "—" if logical is None else f"{format_bytes(logical)} ({logical:,} bytes)"))
        if stats is not None:
            rows.append(("Stored size", f"{format_bytes(stats.stored_bytes_total)} "
                                        f"({stats.stored_bytes_total:,} bytes)"))
            ratio = stats.compression_ratio
            rows.append(("Compression ratio", "—" if ratio is None else f"{ratio:.2f} : 1"))
            rows.append(("Chunks", f"{stats.n_present:,} stored, {stats.n_missing:,} missing (read as fill) "
                                   f"of {stats.n_chunks:,}"))
            if stats.underfill is not None:
                rows.append(("Node chunk use", stats.underfill.describe()))
        elif stats_error:
            rows.append(("Stored size", f"unknown: {stats_error}"))
        else:
            rows.append(("Stored size", "computing…"))
    writer = details.writer
    if writer:
        rows.append(("Written by", writer))
    for key, value in (details.attributes or {}).items():
        if key == "_zarrs" and isinstance(value, dict):
            rows.append(("Attribute _zarrs", f"{writer} ({value.get('description', '')})".strip()))
        else:
            rows.append((f"Attribute {key}", _compact(value)))
    if not details.attributes:
        rows.append(("Attributes", "none"))
    for warning in details.warnings:
        rows.append(("Warning", warning))
    return rows


def summary_html(rows: list[tuple[str, str]]) -> str:
    cells = "".join(
        f"<tr><td style='padding:2px 12px 2px 0; vertical-align:top'><b>{html.escape(label)}</b></td>"
        f"<td style='padding:2px 0'>{html.escape(text).replace(chr(10), '<br>')}</td></tr>"
        for label, text in rows)
    return f"<table cellspacing='0'>{cells}</table>"


def raw_document_text(details: NodeDetails, pretty: bool) -> str:
    """The metadata exactly as stored, or pretty-printed with its key order kept."""
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
            # not JSON (or nested too deeply to parse): show the stored text; the error banner says why
            with contextlib.suppress(ValueError, UnicodeDecodeError, RecursionError):
                text = json.dumps(json.loads(raw), indent=2, ensure_ascii=False)
        texts.append(text if len(parts) == 1 else f"// {name}\n{text}")
    return "\n\n".join(texts)


class MetadataPanel(QWidget):
    """Summary, raw metadata and chunk map of one node."""

    chunk_preview_requested = Signal(str, str)  # array path, selection text covering the chunk
    action_measured = Signal(str, object)  # what was done, Measured (for the status bar)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._hierarchy: Hierarchy | None = None
        self._path: str | None = None
        self._details: NodeDetails | None = None
        self._stats: ChunkStats | None = None
        self._stats_error: str | None = None
        self._runner = BackgroundRunner(self)
        self._stats_runner = BackgroundRunner(self)

        self.banner = MessageBanner()
        self.summary = QTextBrowser()
        self.summary.setOpenLinks(False)
        self.summary.setPlaceholderText("Select a node in the tree to see its metadata.")

        self.raw = QPlainTextEdit()
        self.raw.setReadOnly(True)
        self.raw.setFont(monospace_font())
        self.raw.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.raw.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse
                                         | Qt.TextInteractionFlag.TextSelectableByKeyboard)
        self.highlighter = JsonHighlighter(self.raw.document())
        self.pretty = QCheckBox("Pretty-print")
        self.pretty.setChecked(True)
        self.pretty.setToolTip("Off: the document byte for byte as stored")
        self.pretty.toggled.connect(self._show_raw)
        raw_page = tab_page(self.pretty, self.raw)

        self.chunk_label = QLabel("Select an array to see its chunks.")
        self.chunk_label.setWordWrap(True)
        self.chunk_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.chunk_map = ChunkMapWidget()
        self.chunk_stack = QStackedWidget()
        self.chunk_stack.addWidget(QWidget())
        self.chunk_stack.addWidget(self.chunk_map)
        self.chunk_map.chunk_clicked.connect(self._on_chunk_clicked)
        chunk_page = tab_page(self.chunk_label, self.chunk_stack)

        self.tabs = QTabWidget()
        self.tabs.addTab(chunk_page, "Chunk map")
        self.tabs.addTab(raw_page, "zarr.json")
        self._raw_chosen = False  # the user picked the raw tab: keep it for every node
        self.tabs.tabBarClicked.connect(lambda index: setattr(self, "_raw_chosen", index == 1))
        self.splitter = panes(Qt.Orientation.Vertical, (self.summary, 1), (self.tabs, 1))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.banner)
        layout.addWidget(self.splitter, 1)
        self.setMinimumSize(320, 300)

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.PaletteChange:
            self.highlighter.update_palette(self.palette())
        super().changeEvent(event)

    # -- public -------------------------------------------------------------------------------
    @property
    def chunk_stats(self) -> ChunkStats | None:
        return self._stats

    def show_node(self, hierarchy: Hierarchy, path: str) -> None:
        """Show a node: details (cached metadata) first, chunk statistics when they arrive."""
        self._hierarchy, self._path = hierarchy, path
        self._details, self._stats, self._stats_error = None, None, None
        self._stats_runner.invalidate()
        self.banner.clear()
        self.summary.setHtml(summary_html([("Path", "/" + path), ("", "loading…")]))
        self.raw.clear()
        self._set_chunk_message("Loading…")
        self._runner.run(measured, hierarchy.store, hierarchy.details, path,
                         on_result=self._on_details, on_error=self._on_details_failed)

    def clear(self) -> None:
        self._runner.invalidate()
        self._stats_runner.invalidate()
        self._hierarchy = self._path = self._details = self._stats = None
        self.banner.clear()
        self.summary.clear()
        self.raw.clear()
        self._set_chunk_message("Select an array to see its chunks.")

    def is_busy(self) -> bool:
        return self._runner.busy or self._stats_runner.busy

    # -- results ------------------------------------------------------------------------------
    def _on_details(self, result: Measured) -> None:
        details: NodeDetails = result.value
        self._details = details
        self.action_measured.emit(f"Read metadata of /{details.node.path}", result)
        if details.error:
            self.banner.show_message(details.error)
        self._render_summary()
        self.tabs.setTabText(1, details.node.metadata_key or "zarr.json")
        self._show_raw()
        if not self._raw_chosen:
            self.tabs.setCurrentIndex(0 if details.array is not None else 1)
        if details.array is None:
            self._set_chunk_message("This node is not an array: it has no chunks." if not details.error
                                    else "No chunk map: the metadata could not be read.")
            return
        assert self._hierarchy is not None and self._path is not None
        self._set_chunk_message("Listing chunks…")
        stats_of = functools.partial(chunk_stats, node_array=is_node_array(self._path))
        self._stats_runner.run(measured, self._hierarchy.store, stats_of, self._hierarchy, self._path,
                               on_result=self._on_stats, on_error=self._on_stats_failed)

    def _on_details_failed(self, message: str) -> None:
        self.banner.show_message(message)
        self.summary.setHtml(summary_html([("Path", "/" + (self._path or ""))]))

    def _on_stats(self, result: Measured) -> None:
        stats = result.value
        self._stats = stats
        self.action_measured.emit(f"Chunk statistics of /{stats.path}", result)
        self._render_summary()
        self.chunk_label.setText("Hover a cell for its key, rows and stored bytes; click it to preview that "
                                 "chunk in the Data tab.")
        self.chunk_map.set_stats(stats)
        self.chunk_stack.setCurrentWidget(self.chunk_map)

    def _on_stats_failed(self, message: str) -> None:
        self._stats_error = message
        self._render_summary()
        self._set_chunk_message(f"Could not list the chunks: {message}")

    def _on_chunk_clicked(self, chunk_index: tuple[int, ...]) -> None:
        if self._details is None or self._details.array is None or self._path is None:
            return
        from ecpfs_viewer.model.zarrtree.subset import chunk_selection_text

        self.chunk_preview_requested.emit(self._path, chunk_selection_text(self._details.array, tuple(chunk_index)))

    # -- rendering ----------------------------------------------------------------------------
    def _render_summary(self) -> None:
        if self._details is not None:
            self.summary.setHtml(summary_html(summary_rows(self._details, self._stats, self._stats_error)))

    def _show_raw(self) -> None:
        if self._details is not None:
            self.raw.setPlainText(raw_document_text(self._details, self.pretty.isChecked()))

    def _set_chunk_message(self, text: str) -> None:
        self.chunk_label.setText(text)
        self.chunk_map.set_stats(None)
        self.chunk_stack.setCurrentIndex(0)


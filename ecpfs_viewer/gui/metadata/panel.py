"""The metadata panel: a decoded summary of the selected node, its raw zarr.json, its chunk map.

The node's details come from the hierarchy's cache and the chunk statistics from
``model.chunks.chunk_stats``, both in the background; a result for a node the user has already
left is dropped by the runner. Error nodes show their message in a banner at the top.
"""

from __future__ import annotations

import functools
import html
from typing import Any

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QFont, QFontDatabase
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QStackedWidget,
    QTabWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from ecpfs_viewer.gui.metadata import document_text
from ecpfs_viewer.gui.metadata.chunk_map import ChunkMapWidget
from ecpfs_viewer.gui.metadata.document_text import PanelContent, ShownText, prepare_content, whole_document_text
from ecpfs_viewer.gui.metadata.json_highlighter import JsonHighlighter
from ecpfs_viewer.gui.runtime.action_cost import Measured, measured
from ecpfs_viewer.gui.runtime.workers import BackgroundRunner
from ecpfs_viewer.gui.widgets.display import MessageBanner, panes, tab_page
from ecpfs_viewer.model.ecpfs.paths import is_node_array
from ecpfs_viewer.model.formatting import format_bytes, format_shape
from ecpfs_viewer.model.zarrtree.chunks import ChunkStats, chunk_stats
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy
from ecpfs_viewer.model.zarrtree.nodes import NodeDetails

#: Above this many characters the raw view is not coloured (colouring runs on the GUI thread).
HIGHLIGHTED_CHARS = 1 << 20


def monospace_font() -> QFont:
    return QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)


def _compact(value: Any, limit: int = 300) -> str:
    return document_text.compact(value, limit)


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


def summary_rows(details: NodeDetails, stats: ChunkStats | None = None, stats_error: str | None = None,
                 attributes: list[tuple[str, str]] | None = None) -> list[tuple[str, str]]:
    """The summary as (label, text) rows; stats once the chunk statistics have been computed;
    attributes as prepared in the background (document_text.attribute_rows) when given."""
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
    rows += document_text.attribute_rows(details) if attributes is None else attributes
    for warning in details.warnings:
        rows.append(("Warning", warning))
    return rows


def summary_html(rows: list[tuple[str, str]]) -> str:
    cells = "".join(
        f"<tr><td style='padding:2px 12px 2px 0; vertical-align:top'><b>{html.escape(label)}</b></td>"
        f"<td style='padding:2px 0'>{html.escape(text).replace(chr(10), '<br>')}</td></tr>"
        for label, text in rows)
    return f"<table cellspacing='0'>{cells}</table>"


class MetadataPanel(QWidget):
    """Summary, raw metadata and chunk map of one node."""

    chunk_preview_requested = Signal(str, str)  # array path, selection text covering the chunk
    action_measured = Signal(str, object)  # what was done, Measured (for the status bar)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._hierarchy: Hierarchy | None = None
        self._path: str | None = None
        self._details: NodeDetails | None = None
        self._content: PanelContent | None = None
        self._whole: dict[bool, tuple[str, bool]] = {}  # whole documents loaded on request, by pretty-printed
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
        self.cut_note = QLabel()
        self.show_all = QPushButton("Show all")
        self.show_all.setToolTip("Load the whole document into the view (in the background)")
        self.show_all.clicked.connect(self._load_whole_document)
        self._all_runner = BackgroundRunner(self)
        cut_row = QWidget()
        cut_layout = QHBoxLayout(cut_row)
        cut_layout.setContentsMargins(0, 0, 0, 0)
        cut_layout.addWidget(self.cut_note, 1)
        cut_layout.addWidget(self.show_all)
        self.cut_row = cut_row
        self.cut_row.hide()
        raw_header = QWidget()
        header_layout = QVBoxLayout(raw_header)
        header_layout.setContentsMargins(0, 0, 0, 0)
        header_layout.addWidget(self.pretty)
        header_layout.addWidget(self.cut_row)
        raw_page = tab_page(raw_header, self.raw)

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
        self._content, self._whole = None, {}
        self._stats_runner.invalidate()
        self._all_runner.invalidate()
        self.banner.clear()
        self.summary.setHtml(summary_html([("Path", "/" + path), ("", "loading…")]))
        self._set_raw_text("")
        self._set_chunk_message("Loading…")
        self._runner.run(measured, hierarchy.store, prepare_content, hierarchy, path,
                         on_result=self._on_details, on_error=self._on_details_failed)

    def clear(self) -> None:
        self._runner.invalidate()
        self._stats_runner.invalidate()
        self._all_runner.invalidate()
        self._hierarchy = self._path = self._details = self._stats = self._content = None
        self._whole = {}
        self.banner.clear()
        self.summary.clear()
        self._set_raw_text("")
        self._set_chunk_message("Select an array to see its chunks.")

    def is_busy(self) -> bool:
        return self._runner.busy or self._stats_runner.busy or self._all_runner.busy

    # -- results ------------------------------------------------------------------------------
    def _on_details(self, result: Measured) -> None:
        content: PanelContent = result.value
        details = content.details
        self._content, self._details = content, details
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
            attributes = None if self._content is None else self._content.attribute_rows
            self.summary.setHtml(summary_html(summary_rows(self._details, self._stats, self._stats_error,
                                                           attributes)))

    def _show_raw(self) -> None:
        if self._content is None:
            return
        pretty = self.pretty.isChecked()
        whole = self._whole.get(pretty)
        if whole is not None:
            self._set_raw_text(*whole)
            return
        shown: ShownText = self._content.raw[pretty]
        self._set_raw_text(shown.text, shown)

    def _set_raw_text(self, text: str, shown: ShownText | bool | None = None) -> None:
        """Put text in the raw view, coloured only when short enough to colour at once. shown: how
        it was cut (a ShownText), or True for a whole document whose long lines were broken."""
        self.highlighter.setDocument(self.raw.document() if len(text) <= HIGHLIGHTED_CHARS else None)
        self.raw.setPlainText(text)
        if isinstance(shown, ShownText) and shown.cut:
            self.cut_note.setText(f"{shown.describe_cut()} The rest is not shown.")
            self.show_all.setEnabled(True)
            self.cut_row.show()
        elif shown is True or (not isinstance(shown, ShownText) and len(text) > document_text.SHOWN_CHARS):
            notes = [f"The whole document: {len(text):,} characters"]
            if len(text) > HIGHLIGHTED_CHARS:
                notes.append("not coloured")
            if shown is True:
                notes.append(f"lines longer than {document_text.DISPLAYED_LINE_CHARS:,} characters broken for display")
            self.cut_note.setText("; ".join(notes) + ".")
            self.show_all.setEnabled(False)
            self.cut_row.show()
        else:
            self.cut_row.hide()

    def _load_whole_document(self) -> None:
        """Show all: the whole text is made in the background, then put in the view."""
        if self._details is None:
            return
        self.show_all.setEnabled(False)
        self.cut_note.setText("Loading the whole document…")
        pretty = self.pretty.isChecked()
        self._all_runner.run(whole_document_text, self._details, pretty,
                             on_result=functools.partial(self._on_whole_document, pretty),
                             on_error=self._on_whole_document_failed)

    def _on_whole_document(self, pretty: bool, whole: tuple[str, bool]) -> None:
        self._whole[pretty] = whole
        if self.pretty.isChecked() == pretty:
            self._set_raw_text(*whole)

    def _on_whole_document_failed(self, message: str) -> None:
        self.cut_note.setText(f"Could not load the whole document: {message}")
        self.show_all.setEnabled(True)

    def _set_chunk_message(self, text: str) -> None:
        self.chunk_label.setText(text)
        self.chunk_map.set_stats(None)
        self.chunk_stack.setCurrentIndex(0)


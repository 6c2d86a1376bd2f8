"""The Help menu beyond About: the keyboard shortcuts (read from the window's own actions, so the
list cannot drift from what the keys do) and the documentation (the README of the project)."""

from __future__ import annotations

import importlib.metadata

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ecpfs_viewer.gui.widgets.screen_fit import fit_to_screen

#: [project.urls] Documentation of pyproject.toml, used when the installed metadata lacks it (a bundle).
DOCUMENTATION_URL = "https://github.com/ecpfs-viewer/ecpfs-viewer#readme"

#: What the mouse and keys do beyond the menu actions.
OTHER_KEYS = (
    ("Expand or collapse the selected group", "Right / Left"),
    ("Back or Forward through the selections", "Mouse back / forward buttons"),
    ("Open a node's context menu (Copy Path, Refresh)", "Right-click a tree row"),
    ("Preview one chunk", "Click a chunk-map cell"),
    ("Show one vector of a heatmap", "Click a heatmap row"),
    ("Open a finding's or a node's page", "Click it in the overview"),
)


def documentation_url() -> str:
    """The Documentation URL of the installed package's metadata ([project.urls]), else the README's."""
    try:
        entries: list[str] = importlib.metadata.metadata("ecpfs-viewer").get_all("Project-URL") or []
        for entry in entries:
            label, _, url = str(entry).partition(",")
            if label.strip().lower() == "documentation" and url.strip():
                return url.strip()
    except importlib.metadata.PackageNotFoundError:
        pass
    return DOCUMENTATION_URL


def open_documentation() -> bool:
    """Open the documentation in the user's browser; False when no browser could be started."""
    return bool(QDesktopServices.openUrl(QUrl(documentation_url())))


def shortcut_rows(window: QWidget) -> list[tuple[str, str]]:
    """(what, keys) of every action of window that has a shortcut, then the mouse and other keys."""
    rows = []
    for action in window.actions():
        keys = [k.toString(QKeySequence.SequenceFormat.NativeText) for k in action.shortcuts() if not k.isEmpty()]
        if keys:
            rows.append((action.text().replace("&", "").rstrip("…").strip(), ", ".join(keys)))
    return sorted(rows, key=lambda row: row[0].lower()) + list(OTHER_KEYS)


class ShortcutsDialog(QDialog):
    """A table of what each key does (Help > Keyboard Shortcuts)."""

    def __init__(self, window: QWidget) -> None:
        super().__init__(window)
        self.setWindowTitle("Keyboard Shortcuts")
        rows = shortcut_rows(window)
        self.table = QTableWidget(len(rows), 2)
        self.table.setHorizontalHeaderLabels(["Action", "Keys"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        for row, (what, keys) in enumerate(rows):
            self.table.setItem(row, 0, QTableWidgetItem(what))
            self.table.setItem(row, 1, QTableWidgetItem(keys))
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        note = QLabel(f'More in the <a href="{documentation_url()}">documentation</a>.')
        note.setOpenExternalLinks(True)
        note.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table, 1)
        layout.addWidget(note)
        layout.addWidget(buttons)
        fit_to_screen(self, 560, 460)

    def rows(self) -> list[tuple[str, str]]:
        """What the table shows, row by row."""
        def text(row: int, column: int) -> str:
            item = self.table.item(row, column)
            return item.text() if item is not None else ""

        return [(text(r, 0), text(r, 1)) for r in range(self.table.rowCount())]


def show_shortcuts(window: QWidget) -> ShortcutsDialog:
    """Open the shortcuts table (not modal: it can stay open while the keys are tried)."""
    dialog = ShortcutsDialog(window)
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.show()
    return dialog

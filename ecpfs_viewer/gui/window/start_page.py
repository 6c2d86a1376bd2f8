"""The page shown when no store is open: ways to open one, recent stores, build, demo."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ecpfs_viewer.gui.widgets.icons import standard_icon


class StartPage(QWidget):
    """Big, obvious first steps; the window connects the signals to its actions."""

    open_folder_requested = Signal()
    open_zip_requested = Signal()
    open_url_requested = Signal()
    build_requested = Signal()
    demo_requested = Signal()
    recent_requested = Signal(str)
    clear_recent_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        title = QLabel("ecpfs-viewer")
        font = title.font()
        font.setPointSizeF(font.pointSizeF() * 1.8)
        font.setBold(True)
        title.setFont(font)
        subtitle = QLabel("Browse, check and build ecpfs vector indexes and other Zarr stores.\n"
                          "Open an index folder, a .zip or a URL, or drop one onto this window.")
        subtitle.setWordWrap(True)

        self.buttons: dict[str, QPushButton] = {}
        grid = QGridLayout()
        grid.setHorizontalSpacing(12)
        grid.setVerticalSpacing(8)
        entries = [
            ("folder", "Open Index Folder…", "SP_DirOpenIcon", self.open_folder_requested),
            ("zip", "Open Zip…", "SP_FileIcon", self.open_zip_requested),
            ("url", "Open URL…", "SP_DriveNetIcon", self.open_url_requested),
            ("build", "Build Index from .npy…", "SP_FileDialogNewFolder", self.build_requested),
            ("demo", "Open Demo Index", "SP_MediaPlay", self.demo_requested),
        ]
        for n, (key, text, icon, signal) in enumerate(entries):
            button = QPushButton(standard_icon(icon), text)
            button.setMinimumHeight(34)
            button.clicked.connect(signal.emit)
            self.buttons[key] = button
            grid.addWidget(button, n // 2, n % 2)

        self.recent = QListWidget()
        self.recent.setMinimumHeight(140)
        self.recent.setMaximumHeight(300)  # a long empty list under a few entries reads as wasted space
        self.recent.itemActivated.connect(self._open_item)
        self.recent.itemClicked.connect(self._open_item)
        self.clear_button = QPushButton("Clear")
        self.clear_button.clicked.connect(self.clear_recent_requested.emit)
        recent_box = QGroupBox("Recent")
        recent_layout = QVBoxLayout(recent_box)
        recent_layout.addWidget(self.recent)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(self.clear_button)
        recent_layout.addLayout(row)

        column = QVBoxLayout()
        column.addStretch(1)
        column.addWidget(title)
        column.addWidget(subtitle)
        column.addSpacing(12)
        column.addLayout(grid)
        column.addSpacing(12)
        column.addWidget(recent_box)
        column.addStretch(2)
        holder = QWidget()
        holder.setLayout(column)
        holder.setMaximumWidth(720)
        outer = QHBoxLayout(self)
        outer.addStretch(1)
        outer.addWidget(holder, 4)
        outer.addStretch(1)
        self.set_recent([])

    def set_recent(self, locations: list[str]) -> None:
        self.recent.clear()
        for location in locations:
            item = QListWidgetItem(standard_icon("SP_DirIcon"), location)
            item.setData(Qt.ItemDataRole.UserRole, location)
            item.setToolTip(location)
            self.recent.addItem(item)
        if not locations:
            placeholder = QListWidgetItem("Nothing opened yet.")
            placeholder.setFlags(Qt.ItemFlag.NoItemFlags)
            self.recent.addItem(placeholder)
        self.clear_button.setEnabled(bool(locations))

    def _open_item(self, item: QListWidgetItem) -> None:
        location = item.data(Qt.ItemDataRole.UserRole)
        if location:
            self.recent_requested.emit(location)

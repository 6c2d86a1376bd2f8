"""Dialogs that ask where a store is: an index folder, a zip, or a URL with its options."""

from __future__ import annotations

import os
from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGridLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ecpfs_viewer.gui.widgets.colormaps import error_color
from ecpfs_viewer.model.storage import schemes
from ecpfs_viewer.model.storage.counted_io import METADATA_KEYS
from ecpfs_viewer.model.storage.opening import is_url
from ecpfs_viewer.model.storage.options import SECRET_KEY_RE, RemoteOptions


def holds_zarr_metadata(folder: str) -> bool:
    """True when the folder itself holds Zarr metadata (zarr.json, .zgroup, .zarray, .zmetadata),
    or is named *.zarr: a folder that merely contains stores is a place to look inside, not a store."""
    if folder.rstrip("/\\").lower().endswith(".zarr"):
        return True
    try:
        return any(name in METADATA_KEYS for name in os.listdir(folder))
    except OSError:
        return False


class IndexFolderDialog(QFileDialog):
    """A directory dialog that accepts only a Zarr store folder: a plain folder chosen or typed into
    its path box is entered instead, with a line in the dialog saying so, so a folder of indexes
    is never opened as one "implicit group" store (drop it on the window for that).

    Qt's own dialog, not the platform's: a native one can neither stay open nor show the line."""

    def __init__(self, parent: QWidget | None = None, start: str = "") -> None:
        super().__init__(parent, "Open Index Folder (a *.zarr folder)", start)
        self.setFileMode(QFileDialog.FileMode.Directory)
        self.setOptions(QFileDialog.Option.ShowDirsOnly | QFileDialog.Option.DontUseNativeDialog)
        self.problem = QLabel()  # why the folder chosen was entered instead of opened
        self.problem.setWordWrap(True)
        self.problem.hide()
        grid = self.layout()
        if isinstance(grid, QGridLayout):  # Qt's dialog lays itself out on a grid: the line goes below it
            grid.addWidget(self.problem, grid.rowCount(), 0, 1, grid.columnCount())
        self.directoryEntered.connect(lambda _path: self.problem.hide())

    def chosen(self) -> str:
        files = self.selectedFiles()
        return files[0] if files else ""

    def accept(self) -> None:
        path = self.chosen()
        if not path or holds_zarr_metadata(path) or not os.path.isdir(path):
            super().accept()  # a store, or something open_store explains (a missing path)
            return
        self.setDirectory(path)
        self.problem.setText(f"{os.path.basename(os.path.normpath(path)) or path} holds no Zarr metadata "
                             "(zarr.json, .zgroup, .zarray): choose a store inside it.")
        self.problem.setStyleSheet(f"color: {error_color(self)};")
        self.problem.show()

    def problem_text(self) -> str:
        return self.problem.text() if not self.problem.isHidden() else ""


def ask_index_folder(parent: QWidget | None, start: str = "") -> str | None:
    """The Zarr store folder chosen in an :class:`IndexFolderDialog`; None on Cancel."""
    dialog = IndexFolderDialog(parent, start)
    try:
        return dialog.chosen() or None if dialog.exec() else None
    finally:
        dialog.deleteLater()


def ask_zip(parent: QWidget | None, start: str = "") -> str | None:
    path, _ = QFileDialog.getOpenFileName(parent, "Open Zipped Zarr Store", start,
                                          "Zip archives (*.zip);;All files (*)")
    return path or None


def is_cloud_url(text: str) -> bool:
    """An object-store URL (s3, gs, az …): endpoint, region and anonymous access apply to it."""
    return schemes.is_cloud_url(text.strip())


def describe_options(options: RemoteOptions) -> str:
    """The options of a remembered URL in a few words (the recent list's tooltips)."""
    parts = [f"timeout {options.timeout_s:g} s", f"{options.max_in_flight} requests at once"]
    if options.endpoint:
        parts.append(f"endpoint {options.endpoint}")
    if options.region:
        parts.append(f"region {options.region}")
    if options.anon:
        parts.append("anonymous")
    parts += [f"{key}={'…' if SECRET_KEY_RE.search(key) else value}" for key, value in options.storage_options]
    return ", ".join(parts)


class StorageOptionsTable(QTableWidget):
    """KEY / VALUE rows for an fsspec client (the command line's --storage-option): a last empty row
    is always there to type a new one into; a value whose key names a secret is not remembered."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(0, 2, parent)
        self.setHorizontalHeaderLabels(["Key", "Value"])
        self.horizontalHeader().setStretchLastSection(True)
        self.verticalHeader().hide()
        self.setToolTip("Options of the fsspec client, as --storage-option KEY=VALUE: VALUE is read as JSON "
                        "when it parses, else as text; PROTOCOL.KEY for one layer of a chain. Passwords and "
                        "tokens are not remembered.")
        self.setMaximumHeight(120)
        self.itemChanged.connect(lambda _item: self._keep_one_empty_row())
        self.set_pairs(())

    def set_pairs(self, pairs: Sequence[tuple[str, str]]) -> None:
        self.blockSignals(True)
        self.setRowCount(0)
        for key, value in pairs:
            self._append(key, value)
        self._append("", "")
        self.blockSignals(False)

    def _append(self, key: str, value: str) -> None:
        row = self.rowCount()
        self.insertRow(row)
        self.setItem(row, 0, QTableWidgetItem(key))
        self.setItem(row, 1, QTableWidgetItem(value))

    def _keep_one_empty_row(self) -> None:
        last = self.rowCount() - 1
        if last < 0 or any((self.item(last, c) or QTableWidgetItem()).text().strip() for c in (0, 1)):
            self.blockSignals(True)
            self._append("", "")
            self.blockSignals(False)

    def pairs(self) -> tuple[tuple[str, str], ...]:
        """The rows with a key (KEY, VALUE), in order."""
        found = []
        for row in range(self.rowCount()):
            key, value = (self.item(row, c) for c in (0, 1))
            if key is not None and key.text().strip():
                found.append((key.text().strip(), value.text() if value is not None else ""))
        return tuple(found)


class OpenUrlDialog(QDialog):
    """Asks for a URL (model/storage/schemes.py: s3, gs, az, http(s), any fsspec URL or chain) and the
    remote options the command line takes, fsspec's storage options in a key/value table.

    ``recent``: URLs opened before with their options, newest first; the URL field offers them
    (the newest is filled in, selected so typing replaces it) and choosing one puts back its options.
    """

    def __init__(self, parent: QWidget | None = None, url: str = "",
                 recent: Sequence[tuple[str, RemoteOptions]] = ()) -> None:
        super().__init__(parent)
        self.setWindowTitle("Open URL")
        self.url_combo = QComboBox()
        self.url_combo.setEditable(True)
        self.url_combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.url_combo.setToolTip("Type a URL, or choose one opened before: its options come back with it")
        self.recent = list(recent)
        for where, options in self.recent:
            self.url_combo.addItem(where)
            self.url_combo.setItemData(self.url_combo.count() - 1, describe_options(options),
                                       Qt.ItemDataRole.ToolTipRole)
        url_edit = self.url_combo.lineEdit()
        assert url_edit is not None
        self.url: QLineEdit = url_edit
        self.url.setPlaceholderText("s3://bucket/index.zarr, https://example.org/index.zarr, sftp://host/index.zarr, "
                                    "simplecache::…")
        self.url_combo.setMinimumWidth(460)
        self.endpoint = QLineEdit()
        self.endpoint.setPlaceholderText("optional, e.g. http://127.0.0.1:9000 for MinIO or another S3 clone")
        self.anonymous = QCheckBox("Anonymous access (public bucket: unsigned requests, no credentials)")
        self.anonymous.setChecked(True)
        self.region = QLineEdit()
        self.region.setPlaceholderText("optional, e.g. eu-central-1 (default: AWS_REGION or us-east-1)")
        self.timeout = QDoubleSpinBox()
        self.timeout.setRange(1, 600)
        self.timeout.setValue(RemoteOptions().timeout_s)
        self.timeout.setSuffix(" s per request")
        self.in_flight = QSpinBox()
        self.in_flight.setRange(1, 1024)
        self.in_flight.setValue(RemoteOptions().max_in_flight)
        self.in_flight.setSuffix(" requests at once")
        self.storage_options = StorageOptionsTable()
        self.hint = QLabel()
        self.hint.setWordWrap(True)
        credentials = QLabel("Credentials come from the environment or profile of each cloud (AWS_* or "
                             "AWS_PROFILE, GOOGLE_APPLICATION_CREDENTIALS, AZURE_STORAGE_*); they are never shown "
                             "or logged.")
        credentials.setWordWrap(True)
        form = QFormLayout()
        form.addRow("URL:", self.url_combo)
        form.addRow("Endpoint:", self.endpoint)
        form.addRow("", self.anonymous)
        form.addRow("Region:", self.region)
        form.addRow("Timeout:", self.timeout)
        form.addRow("Concurrency:", self.in_flight)
        form.addRow("Storage options:", self.storage_options)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Open | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(credentials)
        layout.addWidget(self.hint)
        layout.addWidget(self.buttons)
        self.url.textChanged.connect(self._update)
        self.url_combo.currentIndexChanged.connect(self._restore_options)
        if url or not self.recent:
            self.url_combo.setCurrentIndex(-1)
            self.url.setText(url)
        else:
            self._restore_options(0)
        self.url.selectAll()
        self._update()

    def _restore_options(self, index: int) -> None:
        """A recent URL was chosen: its options as they were when it opened."""
        if not 0 <= index < len(self.recent):
            return
        url, options = self.recent[index]
        self.endpoint.setText(options.endpoint or "")
        if is_cloud_url(url):  # the only stores anonymous access means something for
            self.anonymous.setChecked(options.anon)
        self.region.setText(options.region or "")
        self.timeout.setValue(options.timeout_s)
        self.in_flight.setValue(options.max_in_flight)
        self.storage_options.set_pairs(options.storage_options)

    def _update(self) -> None:
        text = self.url.text().strip()
        cloud = is_cloud_url(text)
        for widget in (self.endpoint, self.anonymous, self.region):
            widget.setEnabled(cloud)
        ok = is_url(text)
        self.storage_options.setEnabled(not ok or schemes.opener_for(text) == "fsspec")
        self.buttons.button(QDialogButtonBox.StandardButton.Open).setEnabled(ok)
        self.hint.setText("" if ok or not text else f"Enter a URL: {schemes.describe()}")

    def location(self) -> str:
        return self.url.text().strip()

    def remote_options(self) -> RemoteOptions:
        """The options for model/storage/remote.py, as the CLI's --endpoint/--anon/--region/--timeout give them."""
        cloud = self.endpoint.isEnabled()
        return RemoteOptions(endpoint=self.endpoint.text().strip() or None if cloud else None,
                             anon=self.anonymous.isChecked() and cloud,
                             region=self.region.text().strip() or None if cloud else None,
                             timeout_s=float(self.timeout.value()), max_in_flight=int(self.in_flight.value()),
                             storage_options=self.storage_options.pairs() if self.storage_options.isEnabled() else ())

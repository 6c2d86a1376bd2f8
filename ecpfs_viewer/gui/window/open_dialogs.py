"""Dialogs that ask where a store is: an index folder, a zip, or a URL with its options."""

from __future__ import annotations

import os

from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGridLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from ecpfs_viewer.gui.widgets.colormaps import error_color
from ecpfs_viewer.model.storage.counted_io import METADATA_KEYS
from ecpfs_viewer.model.storage.opening import is_url
from ecpfs_viewer.model.storage.options import RemoteOptions


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


class OpenUrlDialog(QDialog):
    """Asks for an s3, gs, az or http(s) URL and the remote options the command line takes."""

    def __init__(self, parent: QWidget | None = None, url: str = "") -> None:
        super().__init__(parent)
        self.setWindowTitle("Open URL")
        self.url = QLineEdit(url)
        self.url.setPlaceholderText("s3://bucket/index.zarr, gs://…, az://…, or https://example.org/index.zarr")
        self.url.setMinimumWidth(460)
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
        self.hint = QLabel()
        self.hint.setWordWrap(True)
        credentials = QLabel("Credentials come from the environment or profile of each cloud (AWS_* or "
                             "AWS_PROFILE, GOOGLE_APPLICATION_CREDENTIALS, AZURE_STORAGE_*); they are never shown "
                             "or logged.")
        credentials.setWordWrap(True)
        form = QFormLayout()
        form.addRow("URL:", self.url)
        form.addRow("Endpoint:", self.endpoint)
        form.addRow("", self.anonymous)
        form.addRow("Region:", self.region)
        form.addRow("Timeout:", self.timeout)
        form.addRow("Concurrency:", self.in_flight)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Open | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(credentials)
        layout.addWidget(self.hint)
        layout.addWidget(self.buttons)
        self.url.textChanged.connect(self._update)
        self._update()

    def _update(self) -> None:
        text = self.url.text().strip()
        cloud = text.lower().split("://", 1)[0] in ("s3", "s3a", "gs", "gcs", "az", "azure", "abfs", "abfss")
        for widget in (self.endpoint, self.anonymous, self.region):
            widget.setEnabled(cloud)
        ok = is_url(text)
        self.buttons.button(QDialogButtonBox.StandardButton.Open).setEnabled(ok)
        self.hint.setText("" if ok or not text else "Enter a URL starting with s3://, gs://, az://, http:// or https://")

    def location(self) -> str:
        return self.url.text().strip()

    def remote_options(self) -> RemoteOptions:
        """The options for model/storage/remote.py, as the CLI's --endpoint/--anon/--region/--timeout give them."""
        cloud = self.endpoint.isEnabled()
        return RemoteOptions(endpoint=self.endpoint.text().strip() or None if cloud else None,
                             anon=self.anonymous.isChecked() and cloud,
                             region=self.region.text().strip() or None if cloud else None,
                             timeout_s=float(self.timeout.value()), max_in_flight=int(self.in_flight.value()))

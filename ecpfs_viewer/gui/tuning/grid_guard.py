"""The Tune dialog's size guard: which variants of the grid are left out for this input, said before Run.

As soon as the input or the grid changes, a worker forecasts every variant from the input's header
(:func:`ecpfs_viewer.model.tuning.grid_sizes.grid_sizes`, the builder's own size guard, split as the
tune splits the grid). The variants over the guard are listed all at once, each with its size,
above an "Include them anyway" box; Run then builds only the others unless it is ticked.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QCheckBox, QLabel, QVBoxLayout, QWidget
from superqt.utils import qdebounced

from ecpfs_viewer.gui.runtime.workers import BackgroundRunner
from ecpfs_viewer.gui.widgets.colormaps import warning_color
from ecpfs_viewer.model.tasks import TaskError
from ecpfs_viewer.model.tuning.grid_sizes import GridError, VariantSize, grid_sizes, left_out_text, split_grid
from ecpfs_viewer.model.tuning.tune import TuneGrid

CHECK_DELAY_MS = 250
INCLUDE_ANYWAY = "Include them anyway"


def _check(source: str, grid: TuneGrid) -> tuple[list[VariantSize], list[VariantSize]] | GridError:
    """The worker side: (to build, left out) as a run without "anyway" would split them, or why a
    variant cannot be built at all, as a value."""
    try:
        return split_grid(grid_sizes(source, grid.variants()), include_oversize=False)
    except GridError as exc:
        return exc


class GridGuard(QWidget):
    """The left-out variants of the grid for the input, and "Include them anyway"; ``checked`` fires
    when a forecast arrived."""

    checked = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._runner = BackgroundRunner(self)
        self._pending: tuple[str, TuneGrid] | None = None
        self._start_later = qdebounced(self._start, timeout=CHECK_DELAY_MS, parent=self)
        self.to_build: list[VariantSize] = []
        self.left_out: list[VariantSize] = []
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.label.setStyleSheet(f"color: {warning_color(self)};")
        self.include_check = QCheckBox(INCLUDE_ANYWAY)
        self.include_check.setToolTip("Build the variants listed above too, as `tune --force` does")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label)
        layout.addWidget(self.include_check)
        self.hide()

    def check(self, source: str, grid: TuneGrid | None) -> None:
        """The input or the grid changed: forget the last forecast and make a new one shortly."""
        self._runner.invalidate()
        self.to_build, self.left_out = [], []
        self._pending = (source, grid) if source and grid is not None else None
        self.include_check.setChecked(False)  # "anyway" was said of other variants
        self.hide()
        if self._pending is not None:
            self._start_later()

    @property
    def busy(self) -> bool:
        return self._runner.busy

    def _start(self) -> None:
        if self._pending is not None:
            self._runner.run(_check, *self._pending, on_result=self._show, on_error=self._failed)

    def _show(self, outcome: tuple[list[VariantSize], list[VariantSize]] | GridError) -> None:
        if isinstance(outcome, GridError):
            self.hide()  # Run says what is wrong with the grid
        else:
            self._list(*outcome)
        self.checked.emit()

    def _list(self, to_build: list[VariantSize], left_out: list[VariantSize]) -> None:
        self.to_build, self.left_out = to_build, left_out
        of = len(to_build) + len(left_out)
        self.label.setText(left_out_text(left_out, of) + ("." if left_out else ""))
        self.setVisible(bool(left_out))

    def _failed(self, error: TaskError) -> None:
        self.hide()

    def include(self) -> bool:
        return bool(self.left_out) and self.include_check.isChecked()

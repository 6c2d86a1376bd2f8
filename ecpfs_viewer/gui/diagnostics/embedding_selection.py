"""The embedding map's selection: the Select box and Lasso toggles (what a drag on the map does,
one at a time; neither: a drag pans) and the list of what a box or a lasso holds, the nodes of each
level above its items, found in a worker; a double-click on a row asks for that node to be opened."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QLabel, QToolButton, QVBoxLayout, QWidget

from ecpfs_viewer.gui.diagnostics.embedding_view import EmbeddingMapView
from ecpfs_viewer.gui.runtime.workers import BackgroundRunner
from ecpfs_viewer.gui.widgets.rows_table import RowsModel, rows_view, titled
from ecpfs_viewer.model.diagnostics.embedding_map import Selection
from ecpfs_viewer.model.tasks import TaskError

HINT = ("Drag a box with Shift (or Select box), or draw round items with Lasso, to list what is inside; "
        "click a spot to open the leaf most present there.")
HEADERS = ("node", "items inside")
LISTED = 200  # nodes listed at most per level


def mode_buttons(view: EmbeddingMapView) -> tuple[QToolButton, QToolButton]:
    """Select box and Lasso: checkable, at most one on; they set what a drag on ``view`` does."""
    box, lasso = QToolButton(), QToolButton()
    box.setText("Select box")
    box.setToolTip("Drag a box to list the nodes and items in it (or drag with Shift held)")
    lasso.setText("Lasso")
    lasso.setToolTip("Draw round items to list the nodes and items inside the path (Esc cancels while drawing)")

    def toggled(button: QToolButton, other: QToolButton, mode: str, on: bool) -> None:
        if on:
            other.setChecked(False)
            view.select_mode = mode  # type: ignore[assignment]
        elif view.select_mode == mode:
            view.select_mode = "pan"

    for button, other, mode in ((box, lasso, "box"), (lasso, box, "lasso")):
        button.setCheckable(True)
        button.toggled.connect(lambda on, b=button, o=other, m=mode: toggled(b, o, m, on))
    return box, lasso


class SelectionList(QWidget):
    """What the last box or lasso holds (``selection``), listed by node, most items first per level."""

    node_requested = Signal(str)

    def __init__(self, on_error: Callable[[TaskError], None], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._on_error = on_error
        self._runner = BackgroundRunner(self)
        self.selection: Selection | None = None
        self.label = QLabel(HINT)
        self.label.setWordWrap(True)
        self.model = RowsModel(HEADERS, self)
        self.view = rows_view(self.model, self.activated)
        self.view.setToolTip("Double-click a node to open it in the tree")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(titled(self.view, self.label))

    @property
    def busy(self) -> bool:
        return bool(self._runner.busy)

    def list_inside(self, shape: str, job: Callable[..., Selection], *args: Any) -> None:
        """Run ``job(*args)`` (a box or a lasso job) in a worker and list what it finds."""
        self.label.setText(f"Finding what the {shape} holds …")
        self._runner.run(job, *args, on_result=lambda found: self._show(shape, found), on_error=self._on_error)

    def clear(self) -> None:
        self._runner.invalidate()
        self.selection = None
        self.model.set_rows([])
        self.label.setText(HINT)

    def _show(self, shape: str, selection: Selection) -> None:
        self.selection = selection
        rows: list[tuple[object, ...]] = []
        for level in sorted(selection.nodes):
            _ids, counts = selection.nodes[level]
            rows += [(path, int(n)) for path, n in zip(selection.node_paths(level)[:LISTED], counts[:LISTED],
                                                       strict=False)]
        self.model.set_rows(rows)
        first = ", ".join(str(int(i)) for i in selection.item_ids[:12])
        more = " …" if selection.count > 12 else ""
        self.label.setText(f"{selection.count:,} items in the {shape} (ids {first}{more}); the nodes above them, "
                           "most items first per level:" if selection.count else f"The {shape} holds no items.")

    def nodes(self) -> list[str]:
        return [str(self.model.index(r, 0).data()) for r in range(self.model.rowCount())]

    def activated(self, row: int) -> None:
        path = self.model.index(row, 0).data()
        if path:
            self.node_requested.emit(str(path))

"""The embedding map's Placement choice: one entry per placement of the model's table (PCA, t-SNE of
the representatives), each with what it means as its tooltip, the last one chosen remembered in the
settings. A placement that cannot be used here (its optional extra is not installed) is refused when
chosen: the choice goes back to the one before and ``refused`` says the one sentence why."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QWidget

from ecpfs_viewer.gui.runtime.settings import settings
from ecpfs_viewer.model.diagnostics.embedding_map import MAP_PLACEMENTS, map_placement

SETTING = "embedding_map/placement"


class PlacementChoice(QComboBox):
    """The placement the map is made with; ``chosen`` when the user picks another usable one."""

    chosen = Signal(str)  # the placement's id
    refused = Signal(str)  # the sentence why it cannot be used

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setToolTip("How the items are placed on the map")
        self.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        for method in MAP_PLACEMENTS:
            self.addItem(method.title, method.id)
            self.setItemData(self.count() - 1, method.meaning[:1].upper() + method.meaning[1:]
                             + (f" (the {method.extra} extra)" if method.extra else ""), Qt.ItemDataRole.ToolTipRole)
        remembered = str(settings().value(SETTING, "pca"))
        at = self.findData(remembered)
        # a remembered placement whose extra has gone since is not offered as chosen: PCA until asked again
        self.setCurrentIndex(at if at >= 0 and not map_placement(remembered).refusal() else 0)
        self._current = self.method()
        self.currentIndexChanged.connect(self._changed)

    def method(self) -> str:
        return str(self.currentData())

    def choose(self, method: str) -> None:
        """Pick a placement as the user would (refused, or remembered and ``chosen``)."""
        self.setCurrentIndex(self.findData(method))

    def _changed(self, _index: int) -> None:
        method = self.method()
        if method == self._current:
            return
        why = map_placement(method).refusal()
        if why:
            self.blockSignals(True)
            self.setCurrentIndex(self.findData(self._current))
            self.blockSignals(False)
            self.refused.emit(why)
            return
        self._current = method
        settings().setValue(SETTING, method)
        self.chosen.emit(method)

"""A filter field over a findings table: words to keep, ``-CODE`` to hide (as `check --ignore`).

The text is remembered (QSettings ``findings/filter``), so a code a user chose to ignore stays
ignored; the line beside the field always says how many findings the filter hides, so a filtered
table never passes for a clean one.
"""

from __future__ import annotations

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QWidget

from ecpfs_viewer.gui.widgets.display import FindingsList
from ecpfs_viewer.model.ecpfs.finding_filter import parse_finding_filter
from ecpfs_viewer.model.formatting import count_noun

SETTINGS_KEY = "findings/filter"


class FindingsFilterBar(QWidget):
    def __init__(self, table: FindingsList, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.table = table
        self.field = QLineEdit()
        self.field.setClearButtonEnabled(True)
        self.field.setPlaceholderText("Filter findings: words to keep, -W005 to hide a code")
        self.field.setToolTip("Words keep the findings whose path, code or message contains them.\n"
                              "-CODE hides a finding code (as check --ignore), e.g. -W005 or -ECPFS-E012.\n"
                              "Codes: Help, or docs/finding-codes.md.")
        self.note = QLabel()
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.field, 1)
        layout.addWidget(self.note)
        self.field.setText(str(QSettings().value(SETTINGS_KEY, "") or ""))
        self.field.textChanged.connect(self._on_text_changed)
        table.rows_changed.connect(self.apply)
        self.apply()

    def _on_text_changed(self, text: str) -> None:
        QSettings().setValue(SETTINGS_KEY, text)
        self.apply()

    def apply(self) -> None:
        finding_filter = parse_finding_filter(self.field.text())
        self.table.set_filter(finding_filter)
        shown, listed = self.table.filter_counts()
        parts = []
        if finding_filter.active and shown < listed:
            parts.append(f"{shown:,} of {count_noun(listed, 'finding')} shown")
        if finding_filter.unknown_codes:
            parts.append("not a finding code: " + ", ".join(finding_filter.unknown_codes))
        self.note.setText("; ".join(parts))
        self.note.setVisible(bool(parts))

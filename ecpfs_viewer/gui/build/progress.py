"""The progress part of the Build dialog: one labelled bar per builder phase, elapsed time and speed."""

from __future__ import annotations

from PySide6.QtCore import QElapsedTimer, QTimer
from PySide6.QtWidgets import QGridLayout, QGroupBox, QLabel, QProgressBar, QVBoxLayout, QWidget

from ecpfs_viewer.model.build.builder import BuildProgress

CLOCK_INTERVAL_MS = 250  # how often the elapsed time is redrawn while a build runs
IDLE_TEXT = "No build running: the phases and their progress appear here once Build is pressed."


def phase_title(phase: str) -> str:
    """A readable name for a builder phase ("reading", "level 2", "writing")."""
    titles = {"reading": "Reading and checking rows", "writing": "Writing leaf nodes"}
    if phase in titles:
        return titles[phase]
    return phase[:1].upper() + phase[1:]


class _PhaseRow:
    """One labelled progress bar for one build phase."""

    def __init__(self, grid: QGridLayout, row: int, phase: str) -> None:
        self.label = QLabel(phase_title(phase))
        self.bar = QProgressBar()
        self.bar.setRange(0, 1000)
        self.bar.setTextVisible(True)
        grid.addWidget(self.label, row, 0)
        grid.addWidget(self.bar, row, 1)

    def show(self, done: int, total: int, message: str) -> None:
        fraction = done / total if total > 0 else 1.0
        self.bar.setValue(round(1000 * min(1.0, fraction)))
        detail = f"  {message}" if message else ""
        self.bar.setFormat(f"{done:,} / {total:,}{detail}")

    def finish(self) -> None:
        self.bar.setValue(1000)


class BuildProgressBox(QGroupBox):
    """Bars for the phases a build has reached (earlier ones shown complete), and a status line."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Progress", parent)
        column = QVBoxLayout(self)
        self._grid = QGridLayout()
        self._grid.setColumnStretch(1, 1)
        column.addLayout(self._grid)
        self.speed_label = QLabel(IDLE_TEXT)
        self.speed_label.setEnabled(False)  # greyed while idle: a place kept, not a missing part
        column.addWidget(self.speed_label)
        self._phases: dict[str, _PhaseRow] = {}
        self._phase_started = 0.0
        self._rows_total = 0
        self._rows_rate: float | None = None
        self._cancelling = False
        self._cancelled = False
        self._elapsed = QElapsedTimer()
        self._clock = QTimer(self)
        self._clock.setInterval(CLOCK_INTERVAL_MS)
        self._clock.timeout.connect(self._update_status)

    def start(self, rows_total: int) -> None:
        """A build of ``rows_total`` input rows begins: forget the last one, start the clock."""
        for row in self._phases.values():
            row.label.deleteLater()
            row.bar.deleteLater()
        self._phases.clear()
        self._rows_total = rows_total
        self._rows_rate = None
        self._cancelling = self._cancelled = False
        self.speed_label.setEnabled(True)
        self._elapsed.start()
        self._clock.start()
        self._update_status()

    def report(self, p: BuildProgress, hide_message: str = "") -> bool:
        """Show one progress report (its message unless it is ``hide_message``); True when a phase began."""
        row = self._phases.get(p.phase)
        now = self._elapsed.elapsed() / 1000.0
        began = row is None
        if row is None:
            for earlier in self._phases.values():
                earlier.finish()
            row = self._phases[p.phase] = _PhaseRow(self._grid, len(self._phases), p.phase)
            self._phase_started = now
        row.show(p.done, p.total, "" if p.message == hide_message else p.message)
        if p.total == self._rows_total and now > self._phase_started:
            self._rows_rate = p.done / (now - self._phase_started)
        return began

    def set_cancelling(self) -> None:
        """Say that the build was asked to stop."""
        self._cancelling = True
        self._update_status()

    def stop(self, *, completed: bool, cancelled: bool = False) -> None:
        """The build ended: stop the clock; a completed build shows every phase full."""
        self._clock.stop()
        self._cancelled = cancelled
        self._cancelling = False
        self._update_status()
        if completed:
            for row in self._phases.values():
                row.finish()

    def phase_rows(self) -> list[tuple[str, str, int]]:
        """(title, bar text, per-mille done) of every phase shown, in order."""
        return [(row.label.text(), row.bar.text(), row.bar.value()) for row in self._phases.values()]

    def _update_status(self) -> None:
        seconds = self._elapsed.elapsed() / 1000.0 if self._elapsed.isValid() else 0.0
        text = f"Elapsed {seconds:.1f} s"
        if self._rows_rate:
            text += f" · {self._rows_rate:,.0f} rows/s"
        if self._cancelling:
            text += " · cancelling…"
        elif self._cancelled:
            text += " · cancelled"
        self.speed_label.setText(text)

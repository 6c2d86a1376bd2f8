"""Build ▸ Simulate Drift…: the window's face of model/drift/simulate.py (what `ecpfs-viewer drift-sim` runs).

The user names a .npy (its rows in the order they would arrive), the build's levels and target,
the shares to build on and the search_exp; each share is built, the rest added as `add` does, and
the grown index is reported against a build of all rows. The curve is a table, one row per share
of inserted rows, with the verdict the default thresholds give; everything is made in a temporary
folder and removed.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QComboBox, QFormLayout, QLabel, QLineEdit, QSpinBox, QVBoxLayout, QWidget

from ecpfs_viewer.gui.widgets.fields import hbox, npy_field
from ecpfs_viewer.gui.widgets.rows_table import RowsModel, fit_table, rows_view
from ecpfs_viewer.gui.widgets.run_controls import RunDialog
from ecpfs_viewer.model.build.builder import BuildParams
from ecpfs_viewer.model.drift.report import DriftSettings
from ecpfs_viewer.model.drift.simulate import DriftSimulation, simulate_drift

#: "(all)": the same figure for the build of all rows
HEADERS = ("inserted %", "recall", "(all)", "(all) same cost", "distances", "(all)", "leaves", "> 4× target",
           "(all)", "imbalance", "(all)", "own leaf", "rebuild")


def curve_rows(sim: DriftSimulation) -> list[tuple[Any, ...]]:
    """One table row per grown index, fewest inserts first."""
    rows = []
    for pt in sorted(sim.points, key=lambda p: p.inserted_percent):
        d = pt.to_dict()
        rows.append((round(pt.inserted_percent, 1), _r(d["recall"], 3), _r(d["fresh_recall"], 3),
                     ("≥ " if d["same_cost_bound"] == "at least" else "") + f"{d['fresh_recall_same_cost']:.3f}",
                     _r(d["distance_computations"], 0), _r(d["fresh_distance_computations"], 0), d["leaves"],
                     d["over_4x_target"], d["fresh_over_4x_target"], _r(d["imbalance_factor"], 2),
                     _r(d["fresh_imbalance_factor"], 2), _r(d["reach_inserted"], 3), "yes" if d["rebuild"] else "no"))
    return rows


class DriftSimDialog(RunDialog):
    """Run the drift simulation; ``simulation`` holds the last curve shown."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Choose the rows and press Run.", parent)
        self.setWindowTitle("Simulate Drift")
        self.simulation: DriftSimulation | None = None
        intro = QLabel("Builds on the first N % of the rows, adds the rest as upstream's insert does, and compares "
                       "each grown index with a build of all rows: how recall, cost and balance decay as inserts "
                       "accumulate.")
        intro.setWordWrap(True)
        self.rows, browse = npy_field("Rows in arrival order", "rows.npy")
        self.built = QLineEdit("20,40,60,80,100")
        self.built.setToolTip("Percentages of the rows to build on before adding the rest")
        self.levels = _spin(1, 12, 3)
        self.target = _spin(1, 1_000_000, 100)
        self.metric_box = QComboBox()
        self.metric_box.addItems(["L2", "IP"])
        self.search_exp = _spin(1, 4096, 4)
        self.sample = _spin(1, 100_000, 200)
        form = QFormLayout()
        form.addRow(".npy of rows", hbox(self.rows, browse))
        form.addRow("Build on (%)", self.built)
        form.addRow("Levels", hbox(self.levels, QLabel("target cluster items"), self.target, QLabel("metric"),
                                   self.metric_box, stretch=None))
        form.addRow("search_exp", hbox(self.search_exp, QLabel("sampled queries"), self.sample, stretch=None))
        self.model = RowsModel(HEADERS, self)
        self.view = rows_view(self.model)
        self.view.setToolTip("(all): the build of all rows; same cost: its recall for this index's distance "
                             "computations; own leaf: the share of inserted rows a search with "
                             "their own vector at search_exp 1 leads to their own leaf")
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addLayout(form)
        layout.addLayout(self.controls.row)
        layout.addWidget(self.summary)
        layout.addWidget(self.view, 1)
        self.resize(1040, 520)

    def run(self) -> None:
        try:
            built = [float(x) for x in self.built.text().split(",") if x.strip()]
        except ValueError:
            self.controls.say(f"Build on: comma-separated percentages, not {self.built.text()!r}", error=True)
            return
        params = BuildParams(levels=self.levels.value(), target_cluster_items=self.target.value(),
                             metric=self.metric_box.currentText())
        settings = DriftSettings(search_exp=self.search_exp.value(), sample=self.sample.value())
        self.controls.started("Simulating …")
        self._request = self.runner.run(simulate_drift, self.rows.text().strip(), params, built, settings,
                                        on_result=self._show, on_error=self.controls.failed,
                                        on_progress=self.controls.show_progress, heavy=True)

    def _show(self, sim: DriftSimulation) -> None:
        self.simulation = sim
        rows = curve_rows(sim)
        self.model.set_rows(rows, highlight=[i for i, r in enumerate(rows) if r[-1] == "yes"])
        fit_table(self.view)
        first = next((p for p in sorted(sim.points, key=lambda p: p.inserted_percent) if p.report.verdict.rebuild),
                     None)
        said = (f"A rebuild is first advised at {first.inserted_percent:.0f}% inserted: "
                f"{'; '.join(first.report.verdict.reasons)}." if first else "No point needs a rebuild.")
        self.controls.finished(f"{sim.rows:,} × {sim.dim} rows, {len(sim.points)} points. {said}")


def _r(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def _spin(low: int, high: int, value: int) -> QSpinBox:
    box = QSpinBox()
    box.setRange(low, high)
    box.setValue(value)
    return box

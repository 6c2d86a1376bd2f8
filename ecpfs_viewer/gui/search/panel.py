"""The Search panel: a query, its results and the true neighbours it missed, its path through the
tree, and recall sweeps. Every read and computation runs in a worker; a result for a query the
user already replaced (a newer Run, another store) is dropped.
"""

from __future__ import annotations

import threading

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from ecpfs_viewer.gui.runtime.workers import BackgroundRunner
from ecpfs_viewer.gui.search.path_view import SearchPathView
from ecpfs_viewer.gui.search.query_form import QueryForm
from ecpfs_viewer.gui.search.recall_view import RecallView
from ecpfs_viewer.gui.search.session import SearchSession, score_header, shown_score, visited_marks
from ecpfs_viewer.gui.widgets.colormaps import error_color
from ecpfs_viewer.gui.widgets.rows_table import RowsModel, fit_table, rows_view, titled
from ecpfs_viewer.model.ecpfs.paths import node_path
from ecpfs_viewer.model.search import QueryError, SearchParams, SearchProgress, saved_query_ids
from ecpfs_viewer.model.search.explore import Exploration, QuerySpec, compare_exact, explore
from ecpfs_viewer.model.search.results import ProgressCallback
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


def _explore_job(session: SearchSession, spec: QuerySpec, params: SearchParams) -> Exploration:
    return explore(session.reader(), spec, params)


def _compare_job(session: SearchSession, found: Exploration, progress: ProgressCallback | None = None,
                 cancel: threading.Event | None = None) -> Exploration:
    return compare_exact(session.reader(), found, progress, cancel)


def _saved_ids_job(session: SearchSession) -> list[str]:
    return saved_query_ids(session.reader())


#: What the table's headers mean (their tooltips).
_HEADER_TIPS: dict[str, str] = {
    "rank": "Place among this search's results, best first",
    "leaf": "The leaf node (last level) holding the item",
    "row": "The item's row in that leaf's embeddings",
    "exact rank": "Place among the true nearest neighbours, found by comparing the query with every item "
                  "('Compare with exact search'); — when it is not among them",
    "why it was missed": "Where the search's path left this true neighbour: the node it did not open, "
                         "and that node's rank where the search stopped",
}

class SearchPanel(QWidget):
    """Query form, results and misses (tab Search), the path view (tab Path) and recall (tab Recall)."""

    row_requested = Signal(str, int)  # open this leaf with this row selected
    node_requested = Signal(str)  # select this node in the tree
    marks_changed = Signal(object)  # {path: RowMark} for the tree's "search" layer
    finished = Signal()  # a search ended: its results, or the message saying why not, are on screen

    TAB_SEARCH, TAB_PATH, TAB_RECALL = range(3)
    RESULT_HEADERS = ("rank", "item id", "distance", "leaf", "row", "exact rank")
    MISS_HEADERS = ("exact rank", "item id", "distance", "leaf", "row", "why it was missed")
    RESULT_KINDS = ("", "id", "", "", "id")  # ids and rows are copied and searched for: digits ungrouped
    MISS_KINDS = ("", "id", "", "", "id")

    def __init__(self, session: SearchSession | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session or SearchSession()
        self._runner = BackgroundRunner(self)
        self._compare_runner = BackgroundRunner(self)  # the exact comparison, after the results are shown
        self._compare = False  # the search running wants the comparison
        self._saved_runner = BackgroundRunner(self)
        self._exploration: Exploration | None = None

        self.form = QueryForm()
        self.form.run_requested.connect(self.run)
        self.form.saved_wanted.connect(self._load_saved_ids)
        self.run_button = QPushButton("Run")
        self.run_button.setToolTip("Run the search (Ctrl+Enter)")
        self.run_button.setDefault(True)
        self.run_button.clicked.connect(self.run)
        self.status = QLabel()
        self.status.setToolTip("Nodes visited: the nodes the search opened, from the root down (its trace); "
                               "leaves: the last-level nodes whose items it compared with the query")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.results_model = RowsModel(self.RESULT_HEADERS, self, _HEADER_TIPS, kinds=self.RESULT_KINDS)
        self.results_view = rows_view(self.results_model, self._result_activated)
        self.results_view.setToolTip("Double-click a result to open its leaf with the row selected")
        self.misses_label = QLabel("True neighbours missed")
        self.misses_model = RowsModel(self.MISS_HEADERS, self, _HEADER_TIPS, kinds=self.MISS_KINDS)
        self.misses_view = rows_view(self.misses_model, self._miss_activated)
        self.misses_view.setToolTip("Exact neighbours the search did not return, and where its path left them")

        search_page = QWidget()
        page = QVBoxLayout(search_page)
        page.setContentsMargins(4, 4, 4, 4)
        top = QHBoxLayout()
        top.addWidget(self.form, 1)
        top.addWidget(self.run_button, 0, Qt.AlignmentFlag.AlignBottom)
        page.addLayout(top)
        page.addWidget(self.status)
        misses = titled(self.misses_view, self.misses_label)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.results_view)
        split.addWidget(misses)
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 3)
        page.addWidget(split, 1)

        self.path_view = SearchPathView()
        self.path_view.node_requested.connect(self.node_requested)
        self.recall_view = RecallView(self.session)
        self.recall_view.row_requested.connect(self.row_requested)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(search_page, "Search")
        self.tabs.addTab(self.path_view, "Path")
        self.tabs.addTab(self.recall_view, "Recall")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.tabs)
        self.form.source_combo.currentIndexChanged.connect(self._source_changed)
        self.form.compare_check.toggled.connect(lambda _on: self._show_misses_hint())
        self._show_status(self._prompt())
        self._show_misses_hint()
        for keys in ("Ctrl+Return", "Ctrl+Enter"):
            shortcut = QShortcut(QKeySequence(keys), self)
            shortcut.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            shortcut.activated.connect(self._run_shortcut)

    # -- the store ------------------------------------------------------------------------------
    def set_hierarchy(self, hierarchy: Hierarchy | None) -> None:
        """Search another store (None: nothing open): drops running work, results and marks."""
        self.session.set_hierarchy(hierarchy)
        self._runner.invalidate()
        self._compare_runner.invalidate()
        self._saved_runner.invalidate()
        self.recall_view.reset()
        self.form.reset_store()
        self.clear()
        if hierarchy is not None and self.form.kind == "saved":
            self._load_saved_ids()

    def clear(self) -> None:
        self._exploration = None
        self.results_model.clear()
        self.results_model.set_headers(self.RESULT_HEADERS)  # the score's name is the index's metric
        self.misses_model.clear()
        self.misses_model.set_headers(self.MISS_HEADERS)
        self._show_misses_hint()
        self.path_view.clear()
        self.marks_changed.emit({})
        self._show_status(self._prompt())

    def _source_changed(self) -> None:
        if self._exploration is None and not self._runner.busy:
            self._show_status(self._prompt())  # the prompt follows the source; a result's summary stays

    def _prompt(self) -> str:
        """What to do first, for the query source chosen."""
        return {"item": "Type an item id (or pick another query source) and press Run.",
                "file": "Choose a .npy file of queries and its row, then press Run.",
                "saved": "Pick a saved query of this index and press Run.",
                "array": "Name an array of this index and its row (or use a heatmap row), then press Run.",
                }.get(self.form.kind, "Choose a query and press Run.")

    def is_busy(self) -> bool:
        return self._runner.busy or self._compare_runner.busy or self._saved_runner.busy or self.recall_view.busy

    @property
    def exploration(self) -> Exploration | None:
        """The search on screen."""
        return self._exploration

    def _load_saved_ids(self) -> None:
        if self.session.hierarchy is not None:
            self._saved_runner.run(_saved_ids_job, self.session, on_result=self.form.set_saved_ids,
                                   on_error=lambda message: self._show_status(message, error=True))

    # -- running --------------------------------------------------------------------------------
    def _run_shortcut(self) -> None:
        if self.tabs.currentIndex() == self.TAB_RECALL:
            self.recall_view.run()
        else:
            self.run()

    def run(self) -> None:
        """Search with the form's query and knobs; a search still running is dropped."""
        if self.session.hierarchy is None:
            self._show_status("Open an ecpfs index first.", error=True)
            return
        try:
            spec = self.form.query_spec()
            params = self.form.params()
            problems = params.problems()
            if problems:
                raise QueryError("; ".join(problems))
        except QueryError as exc:
            self._show_status(str(exc), error=True)
            return
        self._compare = self.form.compare_check.isChecked()
        self._compare_runner.invalidate()
        self._runner.run(_explore_job, self.session, spec, params, on_result=self._on_result, on_error=self._on_error)
        self._show_status(f"Searching with {spec.label} …")

    def use_row(self, path: str, row: int) -> None:
        """Search with a row of a stored array (e.g. the heatmap row the user picked)."""
        self.form.use_row(path, row)
        self.tabs.setCurrentIndex(self.TAB_SEARCH)
        self.run()

    def _on_progress(self, progress: SearchProgress) -> None:
        self._show_status(f"Comparing with exact search: {progress.phase} {progress.done:,}/{progress.total:,} …")

    def _on_error(self, message: str) -> None:
        self._show_status(message, error=True)
        self.finished.emit()

    def _on_result(self, exploration: Exploration) -> None:
        """The search's own results, path and marks; then the exact comparison, in a heavy worker (it
        reads every leaf once: it waits for validation rather than compete with it)."""
        self._show_results(exploration)
        self.path_view.set_exploration(exploration)
        self.recall_view.set_metric(exploration.metric)
        self.marks_changed.emit(visited_marks(exploration.result, exploration.metric))
        if self._compare:
            self._compare_runner.run(_compare_job, self.session, exploration, on_result=self._on_compared,
                                     on_error=self._on_error, on_progress=self._on_progress, heavy=True)
            self._show_status(f"{self._summary(exploration)} Comparing with exact search …")
            self._show_misses_hint()
        else:
            self.finished.emit()

    def _on_compared(self, exploration: Exploration) -> None:
        self._show_results(exploration)
        self.finished.emit()

    @staticmethod
    def _summary(exploration: Exploration) -> str:
        result = exploration.result
        return (f"{exploration.label}: {len(result.hits)} results from {result.leaves_visited} leaves "
                f"({len(result.trace)} nodes visited) in {result.seconds * 1000:.1f} ms.")

    def _show_results(self, exploration: Exploration) -> None:
        """The results table, the misses (when compared) and the status line."""
        self._exploration = exploration
        result, metric = exploration.result, exploration.metric
        score = score_header(metric)
        exact_rank = {h.item_id: i for i, h in enumerate(exploration.exact or (), 1)}
        self.results_model.set_headers([*self.RESULT_HEADERS[:2], score, *self.RESULT_HEADERS[3:]])
        self.results_model.set_rows(
            [(i, h.item_id, shown_score(metric, h.score), node_path(exploration.levels, h.leaf), h.row,
              exact_rank.get(h.item_id) if exploration.exact is not None else "")
             for i, h in enumerate(result.hits, 1)])
        fit_table(self.results_view, optional=[5])  # exact rank: only when compared
        self.misses_model.set_headers([*self.MISS_HEADERS[:2], score, *self.MISS_HEADERS[3:]])
        self.misses_model.set_rows(
            [(m.true_rank, m.item_id, shown_score(metric, m.score), m.location.leaf_path, m.location.row,
              m.describe()) for m in exploration.misses], tooltips=[m.describe() for m in exploration.misses])
        fit_table(self.misses_view, stretch=5)
        text = self._summary(exploration)
        if exploration.recall is not None and exploration.exact is not None:
            found = len(exploration.exact) - len(exploration.misses)
            text += (f" {found} of the {len(exploration.exact)} exact neighbours found "
                     f"(recall {exploration.recall:.2f}).")
            self.misses_label.setText(f"True neighbours missed: {len(exploration.misses)}")
        if exploration.unreadable:  # the answer is for every other node: said, with each node and why
            text += f" Left out: {'; '.join(u.describe() for u in exploration.unreadable)}"
        self._show_misses_hint()
        self._show_status(text, error=bool(exploration.unreadable))  # a partial answer, said as one

    def _show_misses_hint(self) -> None:
        """The misses' title while no comparison is on screen: what to do, as the form is now."""
        exploration = self._exploration
        if exploration is not None and exploration.exact is not None:
            return  # the count of the comparison shown
        if exploration is not None and self._compare and self._compare_runner.busy:
            hint = "comparing with exact search …"
        elif self.form.compare_check.isChecked():
            hint = "run the search to compare with exact search" if exploration is None else \
                "run again to compare with exact search"
        else:
            hint = "tick 'Compare with exact search'"
        self.misses_label.setText(f"True neighbours missed ({hint})")

    # -- results --------------------------------------------------------------------------------
    def _result_activated(self, row: int) -> None:
        values = self.results_model.row(row)
        self.row_requested.emit(str(values[3]), int(values[4]))

    def _miss_activated(self, row: int) -> None:
        values = self.misses_model.row(row)
        self.row_requested.emit(str(values[3]), int(values[4]))

    def _show_status(self, text: str, error: bool = False) -> None:
        self.status.setText(text)
        self.status.setStyleSheet(f"color: {error_color(self)};" if error else "")

    def status_text(self) -> str:
        return self.status.text()

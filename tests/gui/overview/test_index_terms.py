"""The index overview explains its words: each summary row's tooltip says what its term means, and
a "What am I looking at?" note under the summary names representative, fan-out, leaf and search_exp."""

from __future__ import annotations

from PySide6.QtCore import Qt

from ecpfs_viewer.gui.overview.index_page import IndexPage
from ecpfs_viewer.gui.overview.terms import GLOSSARY
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


def test_summary_terms_have_tooltips_and_a_what_am_i_looking_at_note(qtbot, show, two_clusters_path) -> None:
    page: IndexPage = show(IndexPage(), 1100, 700)
    with qtbot.waitSignal(page.summary_ready, timeout=10_000):
        page.show_index(Hierarchy(open_store(two_clusters_path)))
    tips = {key.text(): (key.toolTip(), value.toolTip()) for key, value in page.facts.labels()}
    representative, on_value = tips["Representatives (R)"]
    assert "stand for a cluster" in representative and on_value == representative  # hover the label or the value
    assert "branching" in tips["Fan-out (root rows)"][0] and "ceil(R^(1/L))" in tips["Fan-out (root rows)"][0]
    assert "leaves" in tips["Levels"][0]
    assert all(key_tip for key_tip, _ in tips.values()), [k for k, (t, _) in tips.items() if not t]  # every row
    note = page.glossary
    assert note.isVisible() and note.text().startswith("<b>What am I looking at?</b>")
    for term, _ in GLOSSARY:
        assert f"<b>{term}</b>" in note.text()
    assert {term for term, _ in GLOSSARY} == {"Representative", "Fan-out", "Leaf", "search_exp"}
    assert note.textFormat() is Qt.TextFormat.RichText

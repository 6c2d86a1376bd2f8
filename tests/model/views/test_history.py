"""The selection history's rules: what Back and Forward walk through."""

from __future__ import annotations

from ecpfs_viewer.model.views.history import SelectionHistory


def test_back_and_forward_walk_the_visits_and_stop_at_the_ends():
    history = SelectionHistory()
    assert not history.can_go_back() and not history.can_go_forward() and history.back() is None
    for path in ("", "lvl_1", "lvl_1/node_0"):
        history.visit(path)
    assert history.back() == "lvl_1"
    assert history.back() == ""
    assert history.back() is None and history.current == ""
    assert history.forward() == "lvl_1"
    assert history.forward() == "lvl_1/node_0"
    assert history.forward() is None and not history.can_go_forward()


def test_a_new_visit_after_going_back_drops_the_entries_ahead():
    history = SelectionHistory()
    for path in ("a", "b", "c"):
        history.visit(path)
    history.back()
    history.visit("b")  # the entry already current: nothing changes
    assert history.entries == ("a", "b", "c") and history.can_go_forward()
    history.visit("d")
    assert history.entries == ("a", "b", "d") and not history.can_go_forward()


def test_the_oldest_entries_go_first_and_clear_forgets_all():
    history = SelectionHistory(max_entries=3)
    for path in "abcde":
        history.visit(path)
    assert history.entries == ("c", "d", "e")
    history.clear()
    assert history.current is None and history.entries == () and not history.can_go_back()


def test_each_entry_keeps_the_view_it_was_last_seen_in() -> None:
    history = SelectionHistory()
    history.visit("a")
    history.note_view("Data")
    history.visit("b")
    assert history.current_view is None
    history.note_view("Metadata")
    assert history.back() == "a" and history.current_view == "Data"
    history.visit("c")  # drops b and its view
    assert history.entries == ("a", "c") and history.current_view is None
    history.clear()
    assert history.current_view is None

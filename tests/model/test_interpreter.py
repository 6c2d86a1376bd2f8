"""The collector's passes in a long command: fewer while a command runs, as before after it, and
the window's own collector (automatic collection off) left alone."""

from __future__ import annotations

import argparse
import gc
from collections.abc import Iterator

import pytest

from ecpfs_viewer.cli import read, run_subcommand
from ecpfs_viewer.model import interpreter
from ecpfs_viewer.model.interpreter import YOUNG_PASS_AFTER, fewer_collections


@pytest.fixture
def automatic() -> Iterator[tuple[int, int, int]]:
    """Automatic collection on, with Python's default thresholds; as it was after."""
    was_enabled, before = gc.isenabled(), gc.get_threshold()
    gc.enable()
    gc.set_threshold(2000, 10, 10)
    yield gc.get_threshold()
    gc.set_threshold(*before)
    if not was_enabled:
        gc.disable()


def test_young_passes_are_fewer_while_held_and_as_before_after(automatic: tuple[int, int, int]) -> None:
    with fewer_collections():
        assert gc.get_threshold() == (YOUNG_PASS_AFTER, *automatic[1:])
    assert gc.get_threshold() == automatic
    with pytest.raises(KeyError), fewer_collections():
        raise KeyError("a command that fails")
    assert gc.get_threshold() == automatic


def test_the_windows_own_collector_is_left_alone(automatic: tuple[int, int, int]) -> None:
    gc.disable()  # what gui/runtime/collector.py does: its timer reads the thresholds
    with fewer_collections():
        assert gc.get_threshold() == automatic and not gc.isenabled()


def test_a_command_runs_with_fewer_collections(automatic: tuple[int, int, int],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[int, int, int]] = []

    def info(args: argparse.Namespace) -> int:
        seen.append(gc.get_threshold())
        return 0

    monkeypatch.setattr(read, "run_info", info)
    assert run_subcommand(["info", "somewhere"]) == 0
    assert seen == [(interpreter.YOUNG_PASS_AFTER, *automatic[1:])]
    assert gc.get_threshold() == automatic

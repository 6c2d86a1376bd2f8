"""model.tasks: one Cancelled raised at explicit checkpoints, and failures as values with their type and traceback."""

from __future__ import annotations

import threading

import pytest

from ecpfs_viewer.model.build.builder import BuildProgress
from ecpfs_viewer.model.build.errors import BuildCancelled
from ecpfs_viewer.model.errors import UserError
from ecpfs_viewer.model.search import SearchCancelled, SearchError, SearchProgress
from ecpfs_viewer.model.tasks import Cancelled, CancelToken, Progress, TaskError, checkpoint
from ecpfs_viewer.model.validation.report import CheckProgress
from ecpfs_viewer.model.zarrtree.subset import SelectionError, SelectionTooLarge


def test_a_checkpoint_passes_until_the_token_is_cancelled() -> None:
    token = CancelToken()
    assert token.is_set() is False and token.cancelled is False
    token.checkpoint()
    token.checkpoint()
    assert not token.cancelled
    token.cancel()
    with pytest.raises(Cancelled):
        token.checkpoint()
    assert token.cancelled and token.is_set()


def test_checkpoint_takes_a_plain_event_or_nothing_and_raises_the_callers_type() -> None:
    checkpoint(None)
    event = threading.Event()
    checkpoint(event)
    event.set()
    with pytest.raises(BuildCancelled, match="build cancelled"):
        checkpoint(event, BuildCancelled)
    token = CancelToken()
    token.cancel()
    with pytest.raises(SearchCancelled) as info:
        checkpoint(token, SearchCancelled)
    assert isinstance(info.value, SearchError)  # callers catching search errors still see it


def test_every_cancellation_is_the_one_cancelled_type() -> None:
    for kind in (BuildCancelled, SearchCancelled):
        assert issubclass(kind, Cancelled)
    assert issubclass(Cancelled, UserError)  # "cancelled" is shown as is, without a class name


def test_a_task_error_is_its_message_with_the_exceptions_type_and_traceback() -> None:
    def fail() -> None:
        raise SelectionTooLarge(12_800_000, 4_000_000)

    try:
        fail()
    except SelectionTooLarge as exc:
        error = TaskError.of(exc)
    assert error == error.message == "selection has 12,800,000 elements; the limit is 4,000,000"
    assert error.kind is SelectionTooLarge
    assert error.is_a(SelectionError) and not error.is_a(KeyError) and not error.cancelled
    assert "Traceback (most recent call last)" in error.traceback and "in fail" in error.traceback
    try:
        raise ValueError("the index is on fire")
    except ValueError as exc:
        assert TaskError.of(exc) == "the index is on fire"
    assert TaskError("stopped", BuildCancelled).cancelled


def test_every_progress_report_has_the_one_shape() -> None:
    def shown(progress: Progress) -> str:
        return f"{progress.message} {progress.done}/{progress.total}"

    assert shown(SearchProgress("exact search", 2, 5)) == "exact search 2/5"
    assert shown(BuildProgress("route", 3, 9, "level 2")) == "level 2 3/9"
    assert shown(CheckProgress(1, 4, "levels")) == "levels 1/4"

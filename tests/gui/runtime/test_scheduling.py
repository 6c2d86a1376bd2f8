"""The scheduling policy: a worker's checkpoints wait while the GUI thread's beat is late, and only
then; knobs can be turned off by name. A fake clock moves only when a checkpoint naps."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from ecpfs_viewer.gui.runtime import scheduling
from ecpfs_viewer.gui.runtime.scheduling import GIVE_UP_S, KNOBS_OFF_ENV, LATE_S, GiveWay, Knobs
from ecpfs_viewer.gui.runtime.workers import BackgroundRunner, wait_for_workers
from ecpfs_viewer.model.tasks import Cancelled, CancelToken


class FakeClock:
    """A clock that moves only when a checkpoint naps; on_nap lets the 'GUI thread' act meanwhile."""

    def __init__(self) -> None:
        self.now = 100.0
        self.naps = 0
        self.on_nap: Callable[[int], None] = lambda naps: None

    def __call__(self) -> float:
        return self.now

    def nap(self, seconds: float) -> None:
        self.now += seconds
        self.naps += 1
        self.on_nap(self.naps)


@pytest.fixture()
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture()
def give_way(clock: FakeClock) -> GiveWay:
    return GiveWay(clock, clock.nap)


def beat_from_another_thread(give_way: GiveWay) -> None:
    """The GUI thread is another thread than the test's (which plays the worker)."""
    thread = threading.Thread(target=give_way.beat)
    thread.start()
    thread.join()


def test_without_beats_nothing_waits(give_way: GiveWay, clock: FakeClock) -> None:
    assert give_way.wait() == 0.0
    assert clock.naps == 0


def test_a_fresh_beat_lets_work_go_on(give_way: GiveWay, clock: FakeClock) -> None:
    beat_from_another_thread(give_way)
    clock.now += LATE_S / 2
    assert give_way.wait() == 0.0


def test_a_late_beat_holds_the_checkpoint_until_the_next_beat(give_way: GiveWay, clock: FakeClock) -> None:
    beat_from_another_thread(give_way)
    clock.now += LATE_S * 2  # the GUI thread is busy
    clock.on_nap = lambda naps: beat_from_another_thread(give_way) if naps == 5 else None
    give_way.wait()
    assert clock.naps == 5  # it waited exactly until the GUI thread beat again


def test_a_blocked_gui_thread_holds_no_work_past_the_give_up_time(give_way: GiveWay, clock: FakeClock) -> None:
    beat_from_another_thread(give_way)
    clock.now += LATE_S * 2
    waited = give_way.wait()  # nobody beats again (the GUI waits for the workers as it quits)
    assert GIVE_UP_S - LATE_S * 2 <= waited < GIVE_UP_S
    assert give_way.wait() == 0.0  # from then on, nothing waits


def test_the_beating_thread_itself_never_waits(give_way: GiveWay, clock: FakeClock) -> None:
    give_way.beat()  # this thread is the GUI thread
    clock.now += LATE_S * 2
    assert give_way.wait() == 0.0


def test_a_token_gives_way_at_checkpoints_but_a_cancelled_one_raises_at_once(give_way: GiveWay,
                                                                            clock: FakeClock) -> None:
    token = give_way.token()
    beat_from_another_thread(give_way)
    clock.now += LATE_S * 2
    clock.on_nap = lambda naps: beat_from_another_thread(give_way) if naps == 3 else None
    assert token.is_set() is False and clock.naps == 0  # looking at the flag is no checkpoint
    token.checkpoint()
    assert clock.naps == 3
    clock.now += LATE_S * 2  # late again
    token.cancel()
    with pytest.raises(Cancelled):
        token.checkpoint()
    assert clock.naps == 3  # a cancelled task stops without waiting for the GUI


def test_a_runners_task_waits_at_its_checkpoint_until_the_gui_thread_beats(qtbot, monkeypatch,
                                                                          clock: FakeClock) -> None:
    give_way = GiveWay(clock, clock.nap)
    monkeypatch.setattr(scheduling, "GIVE_WAY", give_way)
    napping, resume = threading.Event(), threading.Event()

    def nap(naps: int) -> None:
        napping.set()
        resume.wait(10)

    clock.on_nap = nap
    passed: list[str] = []

    def task(progress, cancel: CancelToken) -> str:
        cancel.checkpoint()
        passed.append("checkpoint")
        return "done"

    give_way.beat()  # this (the GUI) thread beat, then got busy
    clock.now += LATE_S * 2
    results: list[str] = []
    runner = BackgroundRunner()
    runner.run(task, on_result=results.append, on_progress=lambda _: None)
    qtbot.waitUntil(napping.is_set, timeout=5000)
    assert passed == []  # held at its checkpoint while the beat is late
    give_way.beat()
    resume.set()
    qtbot.waitUntil(lambda: results == ["done"], timeout=5000)
    assert passed == ["checkpoint"]
    assert wait_for_workers()


def test_knobs_are_turned_off_by_name(monkeypatch) -> None:
    monkeypatch.setenv(KNOBS_OFF_ENV, "nice, gc_freeze")
    knobs = Knobs.from_environment()
    assert (knobs.nice, knobs.gc_freeze) == (False, False)
    assert knobs.heavy_turns and knobs.give_way and knobs.switch_interval
    assert knobs.describe() == "knobs off: nice, gc_freeze"
    with pytest.raises(ValueError, match=r"unknown knob.*gc_frezee"):
        Knobs.without("gc_frezee")


def test_a_token_handed_out_with_give_way_off_never_waits(monkeypatch, give_way: GiveWay,
                                                          clock: FakeClock) -> None:
    monkeypatch.setattr(scheduling, "KNOBS_ON", Knobs.without("give_way"))
    beat_from_another_thread(give_way)
    clock.now += LATE_S * 2
    give_way.token().checkpoint()
    assert clock.naps == 0

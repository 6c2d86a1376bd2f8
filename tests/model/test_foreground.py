"""model.foreground: background checkpoints wait while the GUI thread's beat is late, and only then."""

from __future__ import annotations

import threading

import pytest

from ecpfs_viewer.model import foreground


class FakeClock:
    """A clock that moves only when a checkpoint naps; on_nap lets the 'GUI thread' act meanwhile."""

    def __init__(self) -> None:
        self.now = 100.0
        self.naps = 0
        self.on_nap = lambda naps: None

    def __call__(self) -> float:
        return self.now

    def nap(self, seconds: float) -> None:
        self.now += seconds
        self.naps += 1
        self.on_nap(self.naps)


@pytest.fixture()
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(foreground, "_clock", fake)
    monkeypatch.setattr(foreground, "_nap", fake.nap)
    yield fake
    foreground.stop_beating()


def beat_from_another_thread() -> None:
    """The foreground is another thread than the test's (which plays the background worker)."""
    thread = threading.Thread(target=foreground.beat)
    thread.start()
    thread.join()


def test_without_beats_nothing_waits(clock: FakeClock) -> None:
    foreground.stop_beating()
    assert foreground.give_way() == 0.0
    assert clock.naps == 0


def test_a_fresh_beat_lets_work_go_on(clock: FakeClock) -> None:
    beat_from_another_thread()
    clock.now += foreground.LATE_S / 2
    assert foreground.give_way() == 0.0


def test_a_late_beat_holds_the_checkpoint_until_the_next_beat(clock: FakeClock) -> None:
    beat_from_another_thread()
    clock.now += foreground.LATE_S * 2  # the GUI thread is busy
    clock.on_nap = lambda naps: beat_from_another_thread() if naps == 5 else None
    waited = foreground.give_way()
    assert clock.naps == 5  # it waited exactly until the GUI thread beat again
    assert waited == pytest.approx(5 * foreground._NAP_S)


def test_a_blocked_foreground_holds_no_work_past_the_give_up_time(clock: FakeClock) -> None:
    beat_from_another_thread()
    clock.now += foreground.LATE_S * 2
    waited = foreground.give_way()  # nobody beats again (the GUI waits for the workers as it quits)
    assert foreground.GIVE_UP_S - foreground.LATE_S * 2 <= waited < foreground.GIVE_UP_S
    assert foreground.give_way() == 0.0  # from then on, nothing waits


def test_the_beating_thread_itself_never_waits(clock: FakeClock) -> None:
    foreground.beat()  # this thread is the foreground
    clock.now += foreground.LATE_S * 2
    assert foreground.give_way() == 0.0


def test_a_cancel_flag_is_a_checkpoint_but_a_set_one_answers_at_once(clock: FakeClock) -> None:
    flag = foreground.YieldingEvent()
    beat_from_another_thread()
    clock.now += foreground.LATE_S * 2
    clock.on_nap = lambda naps: beat_from_another_thread() if naps == 3 else None
    assert flag.is_set() is False
    assert clock.naps == 3
    clock.now += foreground.LATE_S * 2  # late again
    flag.set()
    assert flag.is_set() is True
    assert clock.naps == 3  # a cancelled task stops without waiting for the GUI


def test_store_reads_are_checkpoints(clock: FakeClock, tmp_path) -> None:
    from ecpfs_viewer.model.storage.counted_io import read_file

    (tmp_path / "zarr.json").write_bytes(b"{}")
    beat_from_another_thread()
    clock.now += foreground.LATE_S * 2
    clock.on_nap = lambda naps: beat_from_another_thread() if naps == 2 else None
    assert read_file(str(tmp_path / "zarr.json")) == b"{}"
    assert clock.naps == 2

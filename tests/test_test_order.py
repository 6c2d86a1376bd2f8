"""The suite's test order (conftest.pytest_collection_modifyitems): under pytest-xdist's worksteal,
each worker's first share starts with its part of the long tests and of those that mostly wait."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from conftest import _first_share
from xdist.scheduler import WorkStealingScheduling


class _Node:
    """What the scheduler uses of a worker: its name, whether it is leaving, and the tests it is sent."""

    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down = False
        self.sent: list[int] = []

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.extend(indices)


@pytest.mark.parametrize(("total", "workers"), [(2930, 4), (2931, 4), (7, 3), (100, 6)])
def test_the_first_shares_are_those_worksteal_hands_out(pytestconfig: pytest.Config, total: int,
                                                         workers: int) -> None:
    config = SimpleNamespace(getvalue=lambda name: [f"{workers}*popen"] if name == "tx" else None,
                             hook=pytestconfig.hook)
    scheduler = WorkStealingScheduling(config)  # type: ignore[arg-type]
    nodes = [_Node(f"gw{n}") for n in range(workers)]
    for node in nodes:
        scheduler.add_node(node)  # type: ignore[arg-type]
    for node in nodes:
        scheduler.add_node_collection(node, [f"t{n}" for n in range(total)])  # type: ignore[arg-type]
    scheduler.schedule()
    assert [len(node.sent) for node in nodes] == _first_share(total, workers)
    assert sorted(i for node in nodes for i in node.sent) == list(range(total))


class _Item:
    def __init__(self, name: str, marker: str | None) -> None:
        self.name, self.marker = name, marker

    def get_closest_marker(self, name: str) -> object:
        return name if name == self.marker else None


def test_each_workers_first_share_starts_with_its_part_of_the_long_and_waiting_tests(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from conftest import pytest_collection_modifyitems

    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "4")
    items = [_Item(f"t{n}", "long" if n in (5, 50) else "waits" if n in (7, 60, 61, 99) else None) for n in range(103)]
    pytest_collection_modifyitems(items)  # type: ignore[arg-type]
    shares = _first_share(103, 4)
    starts = [sum(shares[:number]) for number in range(4)]
    assert [items[start].name for start in starts] == ["t5", "t7", "t50", "t60"]
    assert [items[start + 1].name for start in starts[:2]] == ["t61", "t99"]
    assert sorted(item.name for item in items) == sorted(f"t{n}" for n in range(103))
    rest = [item.name for item in items if item.marker is None]
    assert rest == [f"t{n}" for n in range(103) if n not in (5, 50, 7, 60, 61, 99)]  # in their order

"""The monkey test: seeded random user actions in the real window over good, damaged and hostile stores.

Pass: no uncaught exception (GUI thread or any other), no traceback in the application's log, the
window settles (never busy for a minute), no label it shows when settled contradicts its state
(monkey.stale_labels: issue 37) and it still answers afterwards. CI runs a few hundred actions with
a fixed seed; ``ECPFS_MONKEY_SEED=123 ECPFS_MONKEY_ACTIONS=20000`` runs a long one (see
docs/reliability.md; issue 37 asks for 5,000). A failure prints the seed, the replay command and
the last actions.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
import stuck_watchdog
from monkey import Monkey, build_stores

from ecpfs_viewer.gui.app import create_main_window
from ecpfs_viewer.gui.runtime import settings as app_settings
from ecpfs_viewer.logs import configure_logging

#: CI: this many actions with this seed; the environment variables choose others
CI_ACTIONS, CI_SEED = 300, 20261201
#: one action (with what it starts) must end within this; past it the run is stuck: stacks are dumped
ACTION_LIMIT_S = 120


def _monkey_settings() -> tuple[int, int, bool]:
    """Seed, number of actions and whether to settle after each, from the environment."""
    seed_text = os.environ.get("ECPFS_MONKEY_SEED", "")
    seed = random.SystemRandom().randrange(2**31) if seed_text == "random" else int(seed_text or CI_SEED)
    count = int(os.environ.get("ECPFS_MONKEY_ACTIONS", CI_ACTIONS))
    settle = os.environ.get("ECPFS_MONKEY_SETTLE", "") == "1"  # idle after every action: closer replays
    return seed, count, settle


SEED, COUNT, SETTLE = _monkey_settings()


@pytest.fixture
def stores(tmp_path: Path, two_clusters_path: Path) -> dict[str, Path]:
    return build_stores(tmp_path / "stores", two_clusters_path)


@pytest.mark.long
@pytest.mark.timeout(max(180, COUNT // 2))  # about 0.15 s an action on a loaded machine; the long mode
def test_random_user_actions_raise_nothing_log_no_traceback_and_leave_a_working_window(
        qtbot, tmp_path: Path, stores: dict[str, Path], http_data_url: str) -> None:
    seed, count, settle = SEED, COUNT, SETTLE
    app_settings.use_settings_dir(tmp_path / "settings")
    log_file = configure_logging()
    assert log_file is not None
    window = create_main_window()
    qtbot.addWidget(window)
    window.resize(1280, 800)
    window.show()
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=5000)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkey = Monkey(qtbot, window, stores, scratch, seed, http_url=f"{http_data_url}/two_clusters.zarr")
    print(f"monkey seed {seed}, {count} actions")  # shown with the failure
    trace = os.environ.get("ECPFS_MONKEY_TRACE")  # a file that gets each action as it is taken
    monkey.trace = open(trace, "a", encoding="utf-8") if trace else None  # noqa: SIM115
    with monkey.watching() as run:
        for number in range(count):
            # a hang: every thread's stack, and the actions that led to it, in the run's summary
            stuck_watchdog.arm(ACTION_LIMIT_S, f"monkey action {number} (seed {seed}; the actions before it:\n"
                               + "\n".join(run.actions[-12:]) + "\n)")
            try:
                monkey.step(number, settle=settle)
            except Exception as exc:  # the window never settled (waitUntil), or the monkey itself broke
                pytest.fail(f"{type(exc).__name__}: {exc}\n{run.replay_hint(count)}")
            if run.errors:
                break
        monkey.close_other_windows()
        monkey.settle()
    if monkey.trace is not None:
        monkey.trace.close()
    stuck_watchdog.arm(ACTION_LIMIT_S, "the monkey's closing checks")
    assert not run.errors, "\n".join(run.errors[:3]) + "\n" + run.replay_hint(count)
    logged = log_file.read_text(encoding="utf-8") if log_file.exists() else ""
    assert "Traceback" not in logged, logged[max(0, logged.index("Traceback") - 2000):][:6000] + run.replay_hint(count)

    # the window still answers: a real action completes
    window.open_location(str(stores["two_clusters"]))
    qtbot.waitUntil(lambda: window.tree_model.is_loaded("lvl_2"), timeout=20_000)
    window.reveal_path("lvl_2/node_3/embeddings")
    qtbot.waitUntil(lambda: window.current_item() is not None
                    and window.current_item().path == "lvl_2/node_3/embeddings", timeout=20_000)
    qtbot.waitUntil(lambda: not window.is_busy(), timeout=20_000)
    window.close()

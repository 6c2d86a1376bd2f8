"""Numeric options are checked while the line is parsed (issue 36): a value out of range is a usage
error (exit 2) naming the option, before any store is opened, never an answer about the index.
And the texts of `--help` and the README's exit-status sentence, for every subcommand."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest
from command_runs import run  # tests/ is on sys.path (conftest)
from locations import REPO  # tests/ is on sys.path (conftest)

from ecpfs_viewer.cli import SUBCOMMANDS, build_subcommand_parser, main
from ecpfs_viewer.cli.numbers import LIST_METAVAR, AtLeast, IntList, Positive

PREFIX = "ecpfs-viewer: error: "


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(PREFIX), err
    return lines[0][len(PREFIX):]


def test_check_max_node_reads_0_is_a_usage_error_not_an_index_error(two_clusters_path: Path, capsys) -> None:
    """Was exit 1 with a fabricated finding about the (valid) index."""
    for value in ("0", "-3"):
        code, out, err = run(capsys, "check", str(two_clusters_path), "--max-node-reads", value)
        assert code == 2 and out == ""
        assert _one_error_line(err) == (f"--max-node-reads must be at least 1 (got {value}) "
                                        "(see `ecpfs-viewer check --help`)")
    code, out, err = run(capsys, "check", str(two_clusters_path), "--max-node-reads", "1")
    assert code == 0, err


#: (command line, what the error names): NOWHERE is a store that does not exist, so an option
#: checked only after the store opened would answer "cannot open" instead
BAD_VALUES = [
    (["check", "NOWHERE", "--max-node-reads", "0"], "--max-node-reads must be at least 1 (got 0)"),
    (["info", "NOWHERE", "--timeout", "0"], "--timeout must be more than 0 (got 0.0)"),
    (["check", "NOWHERE", "--timeout", "-1"], "--timeout must be more than 0 (got -1.0)"),
    (["info", "NOWHERE", "--timeout", "nan"], "--timeout must be more than 0 (got nan)"),
    (["info", "NOWHERE", "--max-in-flight", "0"], "--max-in-flight must be at least 1 (got 0)"),
    (["search", "NOWHERE", "--item", "1", "--k", "0"], "--k must be at least 1 (got 0)"),
    (["search", "NOWHERE", "--item", "1", "--search-exp", "-1"], "--search-exp must be at least 0 (got -1)"),
    (["search", "NOWHERE", "--item", "1", "--max-increments", "-2"], "--max-increments must be at least -1 (got -2)"),
    (["search", "NOWHERE", "--item", "-1"], "--item must be at least 0 (got -1)"),
    (["search", "NOWHERE", "--query-file", "q.npy", "--query-row", "-1"], "--query-row must be at least 0 (got -1)"),
    (["search", "NOWHERE", "--recall", "0"], "--recall must be at least 1 (got 0)"),
    (["search", "NOWHERE", "--item", "1", "--seed", "-1"], "--seed must be at least 0 (got -1)"),
    (["recall", "NOWHERE", "--search-exp", "1,-1"], "--search-exp values must be at least 0 (got -1)"),
    (["recall", "NOWHERE", "--search-exp", ","], "--search-exp needs at least one value"),
    (["recall", "NOWHERE", "--search-exp", "1,x"], "--search-exp must be comma-separated integers, got '1,x'"),
    (["recall", "NOWHERE", "--sample", "0"], "--sample must be at least 1 (got 0)"),
    (["recall", "NOWHERE", "--k", "0"], "--k must be at least 1 (got 0)"),
    (["locate", "NOWHERE", "-1"], "ITEM_ID must be at least 0 (got -1)"),
    (["workload", "NOWHERE", "--sample", "0"], "--sample must be at least 1 (got 0)"),
    (["workload", "NOWHERE", "--sample", "3", "--search-exp", "0"], "--search-exp must be at least 1 (got 0)"),
    (["workload", "NOWHERE", "--sample", "3", "--k", "0"], "--k must be at least 1 (got 0)"),
    (["workload", "NOWHERE", "--sample", "3", "--top", "0"], "--top must be at least 1 (got 0)"),
    (["compare", "NOWHERE", "NOWHERE", "--k", "0"], "--k must be at least 1 (got 0)"),
    (["compare", "NOWHERE", "NOWHERE", "--sample", "0"], "--sample must be at least 1 (got 0)"),
    (["compare", "NOWHERE", "NOWHERE", "--search-exp", "x"], "--search-exp must be comma-separated integers"),
    (["build", "NOWHERE.npy", "OUT", "--levels", "0"], "--levels must be at least 1 (got 0)"),
    (["build", "NOWHERE.npy", "OUT", "--target-cluster-items", "0"], "--target-cluster-items must be at least 1"),
    (["build", "NOWHERE.npy", "OUT", "--node-chunk-kb", "0"], "--node-chunk-kb must be at least 1 (got 0)"),
    (["build", "NOWHERE.npy", "OUT", "--rep-chunk-mb", "0"], "--rep-chunk-mb must be at least 1 (got 0)"),
    (["build", "NOWHERE.npy", "OUT", "--rep-selection", "random", "--seed", "-5"], "--seed must be at least 0"),
    (["tune", "NOWHERE.npy", "--levels", "0,1"], "--levels values must be at least 1 (got 0)"),
    (["tune", "NOWHERE.npy", "--target-cluster-items", "25,-1"], "--target-cluster-items values must be at least 1"),
    (["tune", "NOWHERE.npy", "--k", "0"], "--k must be at least 1 (got 0)"),
    (["tune", "NOWHERE.npy", "--recall-target", "0"], "--recall-target must be more than 0 (got 0.0)"),
    (["tune", "NOWHERE.npy", "--recall-target", "1.5"], "--recall-target must be at most 1.0 (got 1.5)"),
    (["tune", "NOWHERE.npy", "--holdout", "0"], "--holdout must be at least 1 (got 0)"),
    (["tune", "NOWHERE.npy", "--search-exp", "-1"], "--search-exp values must be at least 0 (got -1)"),
    (["tune", "NOWHERE.npy", "--seed", "-1"], "--seed must be at least 0 (got -1)"),
]


@pytest.mark.parametrize(("line", "message"), BAD_VALUES, ids=[" ".join(line) for line, _ in BAD_VALUES])
def test_a_numeric_option_out_of_range_is_a_usage_error_before_anything_opens(
        line: list[str], message: str, tmp_path: Path, capsys) -> None:
    where = {"NOWHERE": str(tmp_path / "nowhere.zarr"), "NOWHERE.npy": str(tmp_path / "nowhere.npy"),
             "OUT": str(tmp_path / "out.zarr"), "q.npy": str(tmp_path / "q.npy")}
    code, out, err = run(capsys, *[where.get(part, part) for part in line], "--json")
    assert code == 2
    error = json.loads(out)["error"]
    assert error["kind"] == "usage" and error["message"] == _one_error_line(err)
    assert error["message"].startswith(message), error["message"]
    assert error["message"].endswith(f"(see `ecpfs-viewer {line[0]} --help`)")
    assert "nowhere" not in error["message"]  # the store was never opened
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_the_window_timeout_is_checked_too(capsys) -> None:
    code, out, err = run(capsys, "--timeout", "0", "https://127.0.0.1:9/index.zarr")
    assert code == 2 and out == ""
    assert _one_error_line(err).startswith("--timeout must be more than 0 (got 0.0)")


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_subcommand_parser()
    (choices,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(choices.choices)


def test_every_numeric_option_of_every_subcommand_has_a_bound() -> None:
    """A new int or float option without one fails here (its out-of-range values would reach the model)."""
    seen = 0
    for name, sub in _subparsers().items():
        for action in sub._actions:
            if action.type in (int, float) or isinstance(action, (AtLeast, Positive, IntList)):
                seen += 1
                assert isinstance(action, (AtLeast, Positive, IntList)), (name, action.option_strings or action.dest)
            if action.dest in ("search_exp", "levels", "target_cluster_items"):
                assert isinstance(action, (AtLeast, IntList)), (name, action.dest)
    assert seen >= 30


def test_search_exp_reads_the_same_in_every_subcommand(capsys) -> None:
    """One placeholder per grammar: N where one value is taken, N[,N...] where a list is."""
    places = {}
    for name, sub in _subparsers().items():
        for action in sub._actions:
            if "--search-exp" in action.option_strings:
                places[name] = action.metavar
                assert "default" in action.help
    assert places == {"search": "N", "workload": "N", "map": "N", "recall": LIST_METAVAR, "compare": LIST_METAVAR,
                      "tune": LIST_METAVAR, "drift": "N", "drift-sim": "N"}
    for name in places:
        with pytest.raises(SystemExit):
            main([name, "--help"])
        assert f"--search-exp {places[name]}" in capsys.readouterr().out


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_help_shows_no_doubled_percent(name: str, capsys) -> None:
    with pytest.raises(SystemExit) as stop:
        main([name, "--help"])
    assert stop.value.code == 0
    text = capsys.readouterr().out
    assert "%%" not in text and "%(" not in text
    if name == "workload":  # was "busiest 1%% of nodes"
        assert "busiest 1% of nodes" in " ".join(text.split())


def test_readme_exit_status_sentence_names_every_subcommand() -> None:
    readme = (REPO / "README.md").read_text()
    sentence = re.search(r"\*\*Exit status and errors\*\*, the same for every subcommand \(([^)]*)\)", readme)
    assert sentence is not None
    named = re.findall(r"`([a-z-]+)`", sentence.group(1))
    assert sorted(named) == sorted(SUBCOMMANDS)

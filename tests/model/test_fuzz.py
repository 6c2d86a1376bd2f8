"""Seeded fuzzing of zarr.json documents: no exception escapes the library except its own user errors.

A small index (two_clusters) is copied once per case and one of its documents is mutated: byte
flips, truncation, number swaps, type swaps, huge and negative numbers, deep nesting. Then the
summary, validation, hierarchy walk, chunk statistics, subset reads and search run on the mutant.
A fixed seed gives the same few hundred cases in CI; ``--fuzz-long`` runs many more.
"""

from __future__ import annotations

import contextlib
import json
import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from locations import TWO_CLUSTERS  # tests/ is on sys.path (conftest)

from ecpfs_viewer.model.ecpfs import level_plan, level_stats, summarize
from ecpfs_viewer.model.errors import UserError
from ecpfs_viewer.model.search import IndexReader, SearchParams
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.validation import validate
from ecpfs_viewer.model.zarrtree.chunks import chunk_stats
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy
from ecpfs_viewer.model.zarrtree.nodes import NodeKind
from ecpfs_viewer.model.zarrtree.subset import default_selection, read_subset

SEED = 20250611
CASES = 200
LONG_CASES = 5000
DOCUMENTS = sorted(p.relative_to(TWO_CLUSTERS).as_posix() for p in TWO_CLUSTERS.rglob("zarr.json"))

Mutator = Callable[[random.Random, bytes], bytes]


def _numbers(node: Any, found: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """(container, key) of every number in a JSON document."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            found.append((node, key))
        elif isinstance(value, (dict, list)):
            _numbers(value, found)
    return found


def _values(node: Any, found: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        found.append((node, key))
        if isinstance(value, (dict, list)):
            _values(value, found)
    return found


def _on_json(change: Callable[[random.Random, Any], None]) -> Mutator:
    def mutate(rng: random.Random, raw: bytes) -> bytes:
        document = json.loads(raw)
        change(rng, document)
        return json.dumps(document).encode()

    return mutate


def _set_number(pick: Callable[[random.Random], Any]) -> Mutator:
    def change(rng: random.Random, document: Any) -> None:
        spots = _numbers(document, [])
        if spots:
            container, key = rng.choice(spots)
            container[key] = pick(rng)

    return _on_json(change)


def _type_swap(rng: random.Random, document: Any) -> None:
    container, key = rng.choice(_values(document, []))
    container[key] = rng.choice([None, True, "x", 1.5, [], {}, [1, 2], {"name": 3}, -1, "float32"])


def _byte_flip(rng: random.Random, raw: bytes) -> bytes:
    data = bytearray(raw)
    for _ in range(rng.randint(1, 4)):
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    return bytes(data)


def _truncate(rng: random.Random, raw: bytes) -> bytes:
    return raw[: rng.randrange(len(raw))]


def _deep(rng: random.Random, raw: bytes) -> bytes:
    depth = rng.choice([2_000, 100_000])
    field = rng.choice([b'"attributes": {', b'"shape": ['])
    nested = b"[" * depth + b"]" * depth
    return raw.replace(field, field + nested + b", ", 1) if field in raw else raw


MUTATORS: dict[str, Mutator] = {
    "byte_flip": _byte_flip,
    "truncate": _truncate,
    "number_swap": _set_number(lambda rng: rng.choice([0, 1, 2, 3, 7, 64, 65536])),
    "type_swap": _on_json(_type_swap),
    "huge_number": _set_number(lambda rng: rng.choice([10**15, 2**63, 2**64 + 1, 10**30, 1e300, 1e400])),
    "negative_number": _set_number(lambda rng: rng.choice([-1, -2, -(2**63), -0.5])),
    "deep_nesting": _deep,
}

#: Cases (at the fixed seed) that still break code owned by other helpers, by stage: not fixed
#: here, the lead routes them. strict: a fix makes the case pass, and the mark must then go.
KNOWN_FAILURES: dict[str, dict[int, str]] = {
}


def _cases(count: int) -> list[tuple[int, str, str]]:
    rng = random.Random(SEED)
    kinds = sorted(MUTATORS)
    return [(i, kinds[i % len(kinds)], rng.choice(DOCUMENTS)) for i in range(count)]


def _mutant(tmp_path: Path, case: int, kind: str, document: str) -> Path:
    store = tmp_path / "mutant.zarr"
    shutil.copytree(TWO_CLUSTERS, store)
    target = store / document
    rng = random.Random(SEED * 1_000_003 + case)
    target.write_bytes(MUTATORS[kind](rng, target.read_bytes()))
    return store


def _walk(h: Hierarchy) -> list[str]:
    """Every node path, listing every container, and the details of each (as the tree does)."""
    arrays: list[str] = []
    stack = [""]
    while stack:
        path = stack.pop()
        for child in h.children(path):
            h.details(child.path)
            if child.kind.is_container:
                stack.append(child.path)
            elif child.kind is NodeKind.ARRAY:
                arrays.append(child.path)
    return arrays


def _library(store: Path, stages: list[str]) -> None:
    """Summary, level statistics, validation, hierarchy walk and subset reads."""
    h = Hierarchy(open_store(store))
    stages.append("summary")
    summary = summarize(h)
    for level in level_plan(summary).shown:
        level_stats(h, level, summary)
    stages.append("validation")
    validate(h, max_node_reads=16, max_vectors=64)
    stages.append("walk")
    for path in _walk(h):
        stages.append(f"read_subset {path}")
        with contextlib.suppress(UserError):
            read_subset(h, path, default_selection(h.array_details(path, UserError)))


def _chunk_stats(store: Path, stages: list[str]) -> None:
    """model/zarrtree/chunks.py chunk_stats on every array."""
    h = Hierarchy(open_store(store))
    for path in _walk(h):
        stages.append(f"chunk_stats {path}")
        with contextlib.suppress(UserError):
            chunk_stats(h, path)


def _search(store: Path, stages: list[str]) -> None:
    """model/search.py: open the index and run one eCP search."""
    stages.append("search")
    try:
        reader = IndexReader(store)
        reader.search(np.zeros(reader.dim, np.float32), SearchParams(k=3, search_exp=2))
    except (UserError, FileNotFoundError, ValueError):
        pass  # search.py's documented errors: a missing array, a bad value


STAGES: dict[str, Callable[[Path, list[str]], None]] = {"library": _library, "chunks": _chunk_stats,
                                                        "search": _search}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "fuzz_case" in metafunc.fixturenames:
        count = LONG_CASES if metafunc.config.getoption("--fuzz-long") else CASES
        params = []
        for stage in STAGES:
            for case, kind, document in _cases(count):
                marks = []
                reason = KNOWN_FAILURES.get(stage, {}).get(case)
                if reason is not None:
                    marks.append(pytest.mark.xfail(strict=True, reason=reason))
                params.append(pytest.param((stage, case, kind, document), id=f"{stage}-{case}-{kind}-{document}",
                                           marks=marks))
        metafunc.parametrize("fuzz_case", params)


def test_mutated_document_raises_no_foreign_exception(tmp_path: Path,
                                                      fuzz_case: tuple[str, int, str, str]) -> None:
    stage, case, kind, document = fuzz_case
    store = _mutant(tmp_path, case, kind, document)
    stages: list[str] = []
    try:
        STAGES[stage](store, stages)
    except UserError:
        pass
    except Exception as exc:  # the failure message is the point
        raise AssertionError(f"{kind} of {document}: {type(exc).__name__}: {exc} (after {stages[-1:]})") from exc

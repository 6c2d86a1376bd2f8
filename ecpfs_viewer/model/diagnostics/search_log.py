"""A workload from ecpfs's own JSONL search logs (format document §12), instead of a replay.

ecpfs with ``--with-logging`` writes one JSON object per line (``timestamp``, ``level``, ``target``,
``message``); search parameters and counts are ``key=value`` pairs inside ``message``:

- ``search: query_id=0 k=3 leaf_nodes_scanned=2 items_returned=3`` (info) ends each search call; the
  count was ``leaves_scanned`` before 0.9.99 and both are read;
- ``new_search: query_id=0 k=3 search_exp=4 ...`` (debug) starts one;
- ``visiting node lvl=0 node=3 is_leaf=0`` (trace) is one node a search popped; ``lvl`` counts from 0
  for ``lvl_1`` (upstream's in-memory level). Newer versions add where the node came from (node
  cache or disk); any ``source``/``from``/``cache`` key is tallied when present.

Trace lines carry no query id: the visits since the previous ``search:`` line are that search's.
Searches that ran at the same time in one process interleave their lines and cannot be told apart;
the node totals stay right, the per-query counts do not, and the report says so.
Reading is bounded: the file is streamed, lines longer than :data:`MAX_LINE_BYTES` are skipped and
counted, never parsed.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ecpfs_viewer.model.diagnostics.workload import NodeVisits, Workload, stored_levels
from ecpfs_viewer.model.errors import UserError
from ecpfs_viewer.model.search.index import IndexReader
from ecpfs_viewer.model.search.results import ProgressCallback, Reporter, SearchParams

MAX_LINE_BYTES = 64 * 1024
_PAIR = re.compile(r"([A-Za-z_]+)=([^\s,:]+)")
_LEAF_KEYS = ("leaf_nodes_scanned", "leaves_scanned")
_SOURCE_KEYS = ("source", "from", "cache", "cached")


class SearchLogError(UserError, ValueError):
    """A log that cannot give a workload; the message says what it lacks."""


@dataclass
class SearchLog:
    """What a log holds: searches, their leaf counts and the node visits (from trace lines)."""

    path: str
    lines: int = 0
    unreadable_lines: int = 0
    long_lines: int = 0
    leaf_field_names: set[str] = field(default_factory=set)
    searches: dict[int, int] = field(default_factory=dict)  # query_id -> leaves scanned (summed over calls)
    nodes_per_search: dict[int, int] = field(default_factory=dict)
    visits: Counter[tuple[int, int]] = field(default_factory=Counter)  # (on-disk level, node id) -> visits
    sources: Counter[str] = field(default_factory=Counter)
    k_values: Counter[int] = field(default_factory=Counter)
    search_exp_values: Counter[int] = field(default_factory=Counter)
    trailing_visits: int = 0  # visits after the last search line
    overlapping: bool = False  # a search started before the previous one ended

    @property
    def total_visits(self) -> int:
        return sum(self.visits.values())

    def lacks(self) -> list[str]:
        """What this log does not record that a workload needs (empty when it has it all)."""
        gaps: list[str] = []
        if not self.searches and not self.visits:
            what = (f"none of its {self.lines:,} lines is an ecpfs search line" if self.lines else "it is empty")
            gaps.append(f"it records no searches ({what}); is it an ecpfs --with-logging JSONL log?")
        elif not self.visits:
            gaps.append(f"it records {len(self.searches):,} searches with their leaf counts but not the nodes they "
                        "visited: it was written below trace level (run ecpfs with --log-level trace)")
        return gaps


def _pairs(message: str) -> dict[str, str]:
    return dict(_PAIR.findall(message))


def _int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None


def read_search_log(path: str | os.PathLike[str], cancel: threading.Event | None = None) -> SearchLog:
    """Stream the log and collect what it records; SearchLogError when the file cannot be read."""
    text_path = os.fspath(path)
    log = SearchLog(text_path)
    reporter = Reporter(None, cancel)
    pending = 0
    open_search = False
    if not os.path.isfile(text_path):  # before opening: opening a FIFO would wait for a writer
        what = "no such file" if not os.path.exists(text_path) else "not a regular file"
        raise SearchLogError(f"{text_path}: cannot read the log ({what})")
    try:
        handle = open(text_path, "rb")  # noqa: SIM115 - closed by the with below
    except OSError as exc:
        raise SearchLogError(f"{text_path}: cannot read the log ({exc.strerror or exc})") from None
    with handle:
        while True:
            raw = handle.readline(MAX_LINE_BYTES + 1)
            if not raw:
                break
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                log.long_lines += 1
                while raw and not raw.endswith(b"\n"):  # skip the rest of the line unread
                    raw = handle.readline(MAX_LINE_BYTES)
                continue
            log.lines += 1
            if log.lines % 4096 == 0:
                reporter.check()
            try:
                entry = json.loads(raw)
            except (ValueError, UnicodeDecodeError):
                log.unreadable_lines += 1
                continue
            message = entry.get("message") if isinstance(entry, dict) else None
            if not isinstance(message, str):
                log.unreadable_lines += 1
                continue
            pairs = _pairs(message)
            if message.startswith("visiting node") or ("lvl" in pairs and "node" in pairs and "is_leaf" in pairs):
                lvl, node = _int(pairs.get("lvl")), _int(pairs.get("node"))
                if lvl is not None and node is not None:
                    log.visits[(lvl + 1, node)] += 1
                    pending += 1
                    source = next((pairs[k] for k in _SOURCE_KEYS if k in pairs), None)
                    if source is not None:
                        log.sources[source] += 1
                continue
            if message.startswith("new_search"):
                if open_search:
                    log.overlapping = True
                open_search = True
                for key, counter in (("k", log.k_values), ("search_exp", log.search_exp_values)):
                    value = _int(pairs.get(key))
                    if value is not None:
                        counter[value] += 1
                continue
            leaf_key = next((key for key in _LEAF_KEYS if key in pairs), None)
            query = _int(pairs.get("query_id"))
            if leaf_key is not None and query is not None:
                log.leaf_field_names.add(leaf_key)
                log.searches[query] = log.searches.get(query, 0) + (_int(pairs[leaf_key]) or 0)
                log.nodes_per_search[query] = log.nodes_per_search.get(query, 0) + pending
                k = _int(pairs.get("k"))
                if k is not None and not log.k_values:
                    log.k_values[k] += 1
                pending = 0
                open_search = False
    log.trailing_visits = pending
    return log


def workload_from_log(index: IndexReader, path: str | os.PathLike[str], *, progress: ProgressCallback | None = None,
                      cancel: threading.Event | None = None) -> Workload:
    """The workload a search log records for ``index``: visits per node, leaves and nodes per search.

    SearchLogError when the log does not record the visited nodes (it says what it lacks)."""
    log = read_search_log(path, cancel)
    gaps = log.lacks()
    if gaps:
        raise SearchLogError(f"{log.path}: cannot be used as a workload: " + "; ".join(gaps))
    reporter = Reporter(progress, cancel)
    levels = stored_levels(index, reporter)
    notes: list[str] = []
    visits = []
    unknown = 0
    for depth, (ids, sizes) in enumerate(levels, start=1):
        position = {int(n): j for j, n in enumerate(ids.tolist())}
        counts = np.zeros(len(ids), np.int64)
        for (level, node), n in log.visits.items():
            if level == depth:
                at = position.get(node)
                if at is None:
                    unknown += n
                else:
                    counts[at] += n
        visits.append(NodeVisits(depth, ids, sizes, counts))
    unknown += sum(n for (level, _), n in log.visits.items() if not 1 <= level <= len(levels))
    if unknown:
        notes.append(f"{unknown:,} of {log.total_visits:,} visits name nodes this index does not store: was the log "
                     "written by a search of another index (or of this one before a rebuild)?")
    if not log.searches:
        notes.append("the log has trace lines but no search lines: leaves and nodes per search are unknown")
    if log.overlapping:
        notes.append("searches overlapped in time (lines of several searches interleave): per-search node counts "
                     "are not reliable; the totals per node are")
    if log.trailing_visits:
        notes.append(f"{log.trailing_visits:,} visits after the last search line (a search cut off) are counted per "
                     "node only")
    if log.unreadable_lines or log.long_lines:
        notes.append(f"{log.unreadable_lines + log.long_lines:,} of {log.lines + log.long_lines:,} lines skipped "
                     "(not JSON, or too long)")
    if log.sources:
        notes.append("node visits by source: " + ", ".join(f"{name} {n:,}" for name, n in log.sources.most_common()))
    names = " and ".join(sorted(log.leaf_field_names)) or "no leaf count"
    notes.append(f"read from {os.path.basename(log.path)}: {log.lines:,} lines, {len(log.searches):,} searches "
                 f"({names}), {log.total_visits:,} node visits")
    order = sorted(log.searches)
    k = log.k_values.most_common(1)[0][0] if log.k_values else SearchParams().k
    search_exp = log.search_exp_values.most_common(1)[0][0] if log.search_exp_values else SearchParams().search_exp
    if len(log.k_values) > 1 or len(log.search_exp_values) > 1:
        notes.append("the searches used several k or search_exp values; the most common is shown")
    return Workload(f"search log {os.path.basename(log.path)}", len(order), SearchParams(k=k, search_exp=search_exp),
                    tuple(visits), np.array([log.searches[q] for q in order], np.int64),
                    np.array([log.nodes_per_search.get(q, 0) for q in order], np.int64), notes=tuple(notes))

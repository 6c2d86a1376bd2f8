"""Every way the index map can colour its nodes, in one table that the map's overlays, the Index map
panel's colour-by choice and the window's wiring all read.

A colouring is identified by a stable ``id`` (what code and tests name it by; never its display
text, which may carry a parameter such as ``misses (search_exp 4)``). ``needs`` says which input
must exist before it can be offered: the map itself, a validation report, a recall sweep, a
replayed workload, a self-reachability report, or nothing but a computation started when the user
chooses it (boundary items).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Literal

OverlayKind = Literal["sequential", "diverging", "flag"]


class Need(Enum):
    """The input a colouring is computed from."""

    MAP = "the index map"
    VALIDATION = "a validation report"
    RECALL_SWEEP = "a recall sweep (Search ▸ Recall)"
    ON_DEMAND = "a computation started when chosen"
    WORKLOAD = "a replayed workload (Diagnostics ▸ Query Workload)"
    SELF_REACHABILITY = "a self-reachability report (Diagnostics ▸ Self-Reachability)"


@dataclass(frozen=True)
class Colouring:
    id: str
    title: str  # the display text (an overlay's name may add a parameter to it)
    kind: OverlayKind
    meaning: str  # one line: what a colour says
    needs: Need
    #: its value is a fact line of a node page (the others have lines of their own there)
    node_fact: bool = False


COLOURINGS: tuple[Colouring, ...] = (
    Colouring("size", "size vs level median", "diverging",
              "items beneath a node against its level's median, log2", Need.MAP),
    Colouring("fill", "chunk fill", "sequential", "how full the node's chunks are", Need.MAP),
    Colouring("findings", "findings", "flag", "the worst validation finding on the node", Need.VALIDATION),
    Colouring("misses", "misses", "sequential",
              "true neighbours the last recall sweep lost at the node", Need.RECALL_SWEEP),
    Colouring("boundary", "boundary items", "sequential",
              "share of the node's items nearly as close to a second representative", Need.ON_DEMAND),
    Colouring("workload", "workload visits", "sequential", "queries of the workload that read the node",
              Need.WORKLOAD, node_fact=True),
    Colouring("strays", "self-reachability strays", "sequential",
              "share of a leaf's items whose own search does not reach it", Need.SELF_REACHABILITY, node_fact=True),
)

_BY_ID = {c.id: c for c in COLOURINGS}


def colouring(colouring_id: str) -> Colouring:
    """The colouring of that id (KeyError names the ids there are)."""
    try:
        return _BY_ID[colouring_id]
    except KeyError:
        raise KeyError(f"no index-map colouring {colouring_id!r}; there are {', '.join(_BY_ID)}") from None


def colouring_ids() -> tuple[str, ...]:
    return tuple(_BY_ID)

"""Where the tests find the checkout and the data in tests/data (see its README), from any folder."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"
TWO_CLUSTERS = DATA / "two_clusters.zarr"
PEER_DATA = DATA / "peer-data"
ZARRITA_V3 = PEER_DATA / "zarrita.js" / "fixtures" / "v3"

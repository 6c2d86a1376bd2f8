"""Which writer produced a store: format version 1, newer versions, and the legacy generations (§7)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ecpfs_viewer.model.ecpfs import finding_codes as fc
from ecpfs_viewer.model.ecpfs.findings import Finding
from ecpfs_viewer.model.ecpfs.metadata import MetadataReader
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy
from ecpfs_viewer.model.zarrtree.nodes import NodeKind

SUPPORTED_FORMAT_VERSION = 1
#: Arrays the upstream loader needs besides ``info/format_version`` (§1.5), in upstream's order.
REQUIRED_ARRAYS = ("info/levels", "info/metric", "info/total_items", "info/next_item_id",
                   "rep_item_ids", "index_root/embeddings")
INFO_INTEGERS = ("info/format_version", "info/levels", "info/total_items", "info/next_item_id")
UNSTAMPED_MESSAGE = ("missing; every other version 1 array is present, so it is read as version 1 "
                     "(upstream's Index::load would stamp it)")


class Generation(StrEnum):
    """Which writer produced a store (§7), from the newest to the oldest."""

    V1 = "format version 1"
    UNSTAMPED = "version 1 without version stamp"
    NEWER = "newer format"
    RUST_PRE_V1 = "Rust pre-v1 index"
    PYTHON_JUNE_2025 = "June-2025 Python index"
    PYTHON_EARLY = "early Python index"
    NOT_INDEX = "not an ecpfs index"
    UNREAD = "could not be read"  # what would tell which generation could not be read: no verdict


@dataclass(frozen=True)
class IndexLayout:
    """The generation of an index and why we think so."""

    generation: Generation
    reason: str
    format_version: int | None = None
    missing: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()

    @property
    def supported(self) -> bool:
        """True when upstream's v1 loaders would open it (a v1 or unstamped index)."""
        return self.generation in (Generation.V1, Generation.UNSTAMPED)

    @property
    def is_index(self) -> bool:
        return self.generation not in (Generation.NOT_INDEX, Generation.UNREAD)

    @property
    def is_legacy(self) -> bool:
        return self.generation in (Generation.RUST_PRE_V1, Generation.PYTHON_JUNE_2025,
                                   Generation.PYTHON_EARLY)

    @property
    def finding(self) -> Finding | None:
        """The one finding that states what the layout means for the user, or None for a v1 index.

        Validation reports exactly this value (same severity, path and text), so a view that shows
        it in a banner can leave it out of its findings list (see ``ValidationReport.layout_finding``).
        Required arrays missing from a v1 index are reported per path by validation, not here.
        """
        if self.generation is Generation.V1:
            return None
        if self.generation is Generation.UNSTAMPED:
            return Finding(fc.UNSTAMPED, "info/format_version", UNSTAMPED_MESSAGE)
        if self.generation is Generation.NEWER:
            return Finding(fc.NEWER_FORMAT, "info/format_version", self.reason)
        return Finding(fc.NOT_AN_INDEX, "", self.reason)

    def to_dict(self) -> dict[str, Any]:
        problem = self.finding
        return {"generation": self.generation.value, "supported": self.supported, "reason": self.reason,
                "format_version": self.format_version, "missing": list(self.missing),
                "finding": None if problem is None else problem.to_dict()}


def detect_index(h: Hierarchy) -> IndexLayout:
    """Recognise the index generation of a store (§7 detection order); never raises."""
    return detect(MetadataReader(h))


def detect(reader: MetadataReader) -> IndexLayout:
    root = reader.h.root()
    if root.kind is NodeKind.ERROR and root.error:  # e.g. refused over the metadata cap: said, not skipped
        reader.findings.append(Finding(fc.UNREADABLE_METADATA, "", f"unreadable metadata: {root.error}"))
    unread = {p: why for p in ("info/format_version", *REQUIRED_ARRAYS) if (why := reader.unread(p))}
    missing = tuple(p for p in REQUIRED_ARRAYS if p not in unread and not reader.exists(p))

    def findings() -> tuple[Finding, ...]:  # read after each step
        return tuple(reader.findings)

    if reader.exists("info/format_version"):
        version = reader.integer("info/format_version")
        if version is None:
            generation = Generation.UNREAD if "info/format_version" in unread else Generation.NOT_INDEX
            return IndexLayout(generation, _unknown_version_reason(reader), None, missing, findings())
        if version != SUPPORTED_FORMAT_VERSION:
            return IndexLayout(Generation.NEWER, f"format version {version} is not supported "
                               f"(this viewer reads version {SUPPORTED_FORMAT_VERSION}); the store is still "
                               "browsable as plain Zarr", version, missing, findings())
        reason = "format version 1" + (f"; missing required arrays: {', '.join(missing)}" if missing else "")
        return IndexLayout(Generation.V1, reason, 1, missing, findings())
    levels = reader.array("info/levels")
    metric = reader.array("info/metric")
    python_levels = levels is not None and levels.shape == (1,)
    int_metric = metric is not None and is_integer_type(metric.data_type)
    if python_levels or int_metric:
        traits = []
        if python_levels:
            traits.append(f"info/levels has shape (1,) ({levels.data_type})")  # type: ignore[union-attr]
        if int_metric:
            traits.append(f"info/metric is an integer ({metric.data_type})")  # type: ignore[union-attr]
        if reader.exists("lvl_0"):
            return IndexLayout(Generation.PYTHON_EARLY, "legacy Python ecpfs index (pre-Rust, levels from lvl_0): "
                               + "; ".join([*traits, "lvl_0 exists"]) + "; rebuild required", None,
                               missing, findings())
        if reader.exists("index_root/node_ids"):
            traits.append("index_root/node_ids exists")
        return IndexLayout(Generation.PYTHON_JUNE_2025, "legacy Python ecpfs index (June 2025, pre-Rust): "
                           + "; ".join(traits) + "; rebuild required", None, missing, findings())
    if unread:  # absent or not could not be told: no verdict on what the store is
        return IndexLayout(Generation.UNREAD, _unread_reason(unread), None, missing, findings())
    counters = [p for p in ("info/total_items", "info/next_item_id") if not reader.exists(p)]
    if metric is not None and metric.data_type == "string" and counters:
        return IndexLayout(Generation.RUST_PRE_V1, f"pre-v1 Rust index: missing {', '.join(counters)}; "
                           "rebuild or add the counters", None, missing, findings())
    if not missing:
        return IndexLayout(Generation.UNSTAMPED, "every version 1 array is present but info/format_version "
                           "is missing; read as version 1", None, missing, findings())
    all_missing = ("info/format_version", *missing)
    return IndexLayout(Generation.NOT_INDEX, "not a valid ecpfs index, missing: " + ", ".join(all_missing),
                       None, all_missing, findings())


def _unknown_version_reason(reader: MetadataReader) -> str:
    """Why info/format_version gave no number; a folder that may not be read is said to be so."""
    for path, shown in (("info", "info/"), ("info/format_version", "info/format_version")):
        node = reader.node(path)
        if node is not None and node.kind is NodeKind.ERROR and "Permission denied" in (node.error or ""):
            return f"{shown} cannot be read (permission denied), so the format is unknown"
    why = reader.unread("info/format_version")
    return "info/format_version could not be read" + (f" ({why})" if why else "") + ", so the format is unknown"


def _unread_reason(unread: dict[str, str]) -> str:
    """'info/format_version, info/levels could not be read (info/zarr.json: not valid JSON (...)), so ...'"""
    reasons = list(dict.fromkeys(unread.values()))
    more = f"; and {len(reasons) - 1} more" if len(reasons) > 1 else ""
    return (f"{', '.join(unread)} could not be read ({reasons[0]}{more}), so whether this is an ecpfs index "
            "is unknown")


def is_integer_type(data_type: str) -> bool:
    return data_type.startswith(("int", "uint"))

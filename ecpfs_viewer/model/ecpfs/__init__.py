"""What an ecpfs index is: recognise its generation, summarise it, and measure each level.

Everything here reads metadata (``zarr.json`` documents and listings) and at most a few rank-0
scalars, never a node's chunks, so the summary of a 4,000-node level costs a fraction of a second.
The one step that has to decode data, finding children that ``node_ids`` reference but that do
not exist, is a separate function (:func:`referenced_children`). Problems are returned as
:class:`Finding` values naming the path they concern; nothing here raises on a bad store.
Format reference: ``docs/ecpfs-format.md`` (§1 layout, §5 ``ecp info``, §7 older formats).

Submodules: ``findings`` (Finding, Severity), ``metadata`` (reading documents and scalars),
``layout`` (which generation wrote a store), ``summary`` (the index header), ``levels`` and
``node_arrays`` (per-level statistics), ``shared_levels`` (them cached per Hierarchy),
``references`` (decoding node_ids),
``paths`` (the lvl_N/node_M path grammar).
This package re-exports their public names.
"""

from typing import TYPE_CHECKING

from ecpfs_viewer.model.lazy import lazy_exports

if TYPE_CHECKING:
    from ecpfs_viewer.model.ecpfs.findings import Finding, Severity, cap_findings
    from ecpfs_viewer.model.ecpfs.layout import (
        INFO_INTEGERS,
        REQUIRED_ARRAYS,
        SUPPORTED_FORMAT_VERSION,
        Generation,
        IndexLayout,
        detect_index,
    )
    from ecpfs_viewer.model.ecpfs.levels import (
        MAX_LISTED_IDS,
        MAX_LISTED_LEVELS,
        LevelPlan,
        LevelStats,
        NodeSize,
        level_plan,
        level_stats,
        nodes_stats,
    )
    from ecpfs_viewer.model.ecpfs.metadata import ArrayMeta, MetadataReader, parse_array_meta
    from ecpfs_viewer.model.ecpfs.paths import ROOT_EMBEDDINGS
    from ecpfs_viewer.model.ecpfs.references import ChildReferences, ReferencedChildren, referenced_children, spread
    from ecpfs_viewer.model.ecpfs.shared_levels import (
        cached_level_stats,
        forget_level_stats,
        held_level_stats,
        shared_level_stats,
    )
    from ecpfs_viewer.model.ecpfs.summary import (
        LEGACY_METRIC_CODES,
        LEGAL_METRICS,
        MAX_QUERIES_READ,
        IndexSummary,
        SavedQuery,
        summarize,
    )

__all__ = [
    "INFO_INTEGERS",
    "LEGACY_METRIC_CODES",
    "LEGAL_METRICS",
    "MAX_LISTED_IDS",
    "MAX_LISTED_LEVELS",
    "MAX_QUERIES_READ",
    "REQUIRED_ARRAYS",
    "ROOT_EMBEDDINGS",
    "SUPPORTED_FORMAT_VERSION",
    "ArrayMeta",
    "ChildReferences",
    "Finding",
    "Generation",
    "IndexLayout",
    "IndexSummary",
    "LevelPlan",
    "LevelStats",
    "MetadataReader",
    "NodeSize",
    "ReferencedChildren",
    "SavedQuery",
    "Severity",
    "cached_level_stats",
    "cap_findings",
    "detect_index",
    "forget_level_stats",
    "held_level_stats",
    "level_plan",
    "level_stats",
    "nodes_stats",
    "parse_array_meta",
    "referenced_children",
    "shared_level_stats",
    "spread",
    "summarize",
]

# imported on first use, so that a submodule (paths, locate) can be imported without the rest
__getattr__ = lazy_exports(__name__, {
    "findings": ("Finding", "Severity", "cap_findings"),
    "layout": (
        "INFO_INTEGERS", "REQUIRED_ARRAYS", "SUPPORTED_FORMAT_VERSION", "Generation", "IndexLayout", "detect_index"
    ),
    "levels": (
        "MAX_LISTED_IDS", "MAX_LISTED_LEVELS", "LevelPlan", "LevelStats", "NodeSize", "level_plan", "level_stats",
        "nodes_stats"
    ),
    "shared_levels": ("cached_level_stats", "forget_level_stats", "held_level_stats", "shared_level_stats"),
    "metadata": ("ArrayMeta", "MetadataReader", "parse_array_meta"),
    "paths": ("ROOT_EMBEDDINGS",),
    "references": ("ChildReferences", "ReferencedChildren", "referenced_children", "spread"),
    "summary": ("LEGACY_METRIC_CODES", "LEGAL_METRICS", "MAX_QUERIES_READ", "IndexSummary", "SavedQuery", "summarize"),
})

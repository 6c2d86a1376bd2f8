"""The §10 validation checklist of the format document, as a report of findings with paths.

Metadata checks (arrays, data types, counters, every node's shapes) are complete. Checks that
must decode data (node_ids and item_ids values, duplicate item ids, unit length, rows that must
equal ``rep_embeddings`` rows) read a bounded, evenly spread sample of nodes; each such finding
and :attr:`ValidationReport.checked` say how much was read.

Submodules: ``report`` (results and run state), ``metadata_checks``, ``data_checks`` (sampled
decoding) and ``checklist`` (:func:`validate`, which runs them in order).
"""

from ecpfs_viewer.model.ecpfs import Finding, Severity
from ecpfs_viewer.model.validation.checklist import required_paths, validate
from ecpfs_viewer.model.validation.data_checks import NORM_TOLERANCE
from ecpfs_viewer.model.validation.metadata_checks import (
    DRIFT_FENCE_IQR,
    DRIFT_MIN_CHUNKS,
    OversizedLeaf,
    oversize_rule,
    oversized_leaves,
)
from ecpfs_viewer.model.validation.report import CheckProgress, PathFindings, ValidationReport, findings_under

__all__ = ["DRIFT_FENCE_IQR", "DRIFT_MIN_CHUNKS", "NORM_TOLERANCE", "CheckProgress", "Finding", "OversizedLeaf",
           "PathFindings", "Severity", "ValidationReport", "findings_under", "oversize_rule", "oversized_leaves",
           "required_paths", "validate"]

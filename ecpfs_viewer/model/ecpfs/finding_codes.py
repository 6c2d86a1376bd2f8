"""The one table of finding codes: every finding the model makes carries one of these.

A code (``ECPFS-E012``) is stable: scripts match on it instead of the English message, and
`check --ignore CODE` leaves it out of the verdict. E is an error, W a warning, I a note; the
severity of a finding comes from its code, so the two cannot disagree. Codes are never reused or
renumbered; a retired code stays in the table with its title. ``docs/finding-codes.md`` is
generated from this table (``python -m ecpfs_viewer.model.ecpfs.finding_codes``) and a test checks
that it still matches.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from enum import StrEnum


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


_LETTERS = {"E": Severity.ERROR, "W": Severity.WARNING, "I": Severity.INFO}
CODE_RE = re.compile(r"^ECPFS-[EWI]\d{3}$")


@dataclass(frozen=True)
class FindingCode:
    """One row of the table: the code, its severity, a title and what it means for the user."""

    code: str
    severity: Severity
    title: str
    explanation: str


#: code -> its row, in the order of the table below
CODES: dict[str, FindingCode] = {}


def _code(short: str, title: str, explanation: str) -> str:
    code = f"ECPFS-{short}"
    if not CODE_RE.match(code) or code in CODES:
        raise ValueError(f"bad or repeated finding code {code}")
    CODES[code] = FindingCode(code, _LETTERS[short[0]], title, explanation)
    return code


# -- reading the store: documents, listings, data -----------------------------------------------
UNREADABLE_METADATA = _code("E001", "Unreadable metadata",
                            "A zarr.json document could not be read or parsed; what it describes is unknown.")
CANNOT_LIST = _code("E002", "Cannot list",
                    "A folder of the store could not be listed; the nodes or arrays in it are unknown.")
NOT_AN_ARRAY = _code("E003", "Not an array", "The format needs an array at this path, and something else is there.")
BAD_ARRAY_METADATA = _code("E004", "Malformed array metadata",
                           "An array's zarr.json is readable but does not describe a valid array.")
UNREADABLE_VALUE = _code("E005", "Unreadable value", "A scalar's stored value could not be read or listed.")
WRONG_VALUE = _code("E006", "Wrong kind of value",
                    "A scalar holds something other than the single value of the kind the format requires.")
VALUE_IS_FOLDER = _code("E007", "Value is a folder",
                        "Where a scalar's stored chunk should be there is a folder; the fill value is shown.")
HEADER_UNREAD = _code("E008", "Index header could not be read",
                      "The index's header (info/ and index_root) could not be read; nothing else can be checked.")
COULD_NOT_BE_READ = _code("E009", "Could not be read",
                          "A read failed on the way (a timeout, a refused or broken request); retrying may succeed. "
                          "It says nothing about the data.")
UNREADABLE_DATA = _code("E010", "Unreadable data",
                        "An array's chunks were read but could not be decoded or are not what the metadata says.")
NODE_METADATA = _code("E011", "Malformed node",
                      "A node's arrays are missing their metadata, are not arrays, or are both node_ids and item_ids.")
NODES_UNREAD = _code("E012", "Nodes could not be read",
                     "Some nodes of a level could not be read; the level's statistics lack them.")
NODE_INCOMPLETE = _code("E013", "Node incomplete", "An array of this node is missing or unreadable.")
LEVEL_UNREAD = _code("E014", "Level could not be read", "A level could not be read; its statistics are unknown.")
STATISTICS_FAILED = _code("E015", "Statistics failed",
                          "A level's statistics could not be computed (a bug or unexpected data; see the log).")
VALIDATION_STOPPED = _code("E016", "Validation stopped",
                           "The check stopped on an unexpected error; the report is incomplete (see the log).")

# -- layout and format version ------------------------------------------------------------------
NEWER_FORMAT = _code("E020", "Newer format version",
                     "info/format_version is newer than this viewer supports.")
NOT_AN_INDEX = _code("E021", "Not an ecpfs index", "The store lacks what makes it an ecpfs index, or is of an "
                     "unsupported generation.")
MISSING_REQUIRED = _code("E022", "Required array missing", "An array format version 1 requires is absent.")
INFO_SCALAR_TYPE = _code("E023", "Info scalar of the wrong type",
                         "An info/ scalar has the wrong data type or is not a scalar (shape []).")
REP_IDS_TYPE = _code("E024", "rep_item_ids of the wrong type", "rep_item_ids must be a 1-D uint32 array.")
STORED_DTYPE = _code("E025", "Unsupported stored dtype", "Embeddings are stored in a data type ecpfs does not use.")
REP_EMBEDDINGS_MISMATCH = _code("E026", "rep_embeddings mismatch",
                                "rep_embeddings differs from index_root/embeddings in dtype or dimension, or from "
                                "rep_item_ids in rows.")
LEVELS_TOO_FEW = _code("E027", "Too few levels", "info/levels must be at least 1.")
FAN_OUT_TOO_LARGE = _code("E028", "Fan-out above R",
                          "index_root has more rows than there are representatives.")
ROOT_SHAPE = _code("E029", "Root embeddings not 2-D", "index_root/embeddings must have the shape (rows, dim).")
UNKNOWN_METRIC = _code("E030", "Unknown metric", "info/metric is not 'L2' or 'IP' (case-sensitive).")
LEVEL_ONE_MISSING = _code("E031", "Level 1 missing", "An index needs at least level 1 (lvl_1).")
LEVEL_MISSING = _code("E032", "Level does not exist", "A level the index declares is not stored.")
UNSTAMPED = _code("W001", "No format version",
                  "info/format_version is absent: written before versions were stamped, read as version 1.")
IMPLICIT_GROUPS = _code("W002", "Implicit groups",
                        "Groups without zarr.json (written before 0.9.99); zarr-python cannot open them as groups.")
ITEM_ID_GAP = _code("W003", "Reserved item ids never written",
                    "next_item_id is above total_items; likely a crash during an insert.")
NEXT_ID_BELOW_TOTAL = _code("W004", "next_item_id below total_items",
                            "Impossible upstream; likely corruption of info/.")
FAN_OUT_DIFFERS = _code("W005", "Unexpected fan-out",
                        "The fan-out differs from ceil(R^(1/L)); fine for custom or hand-made indexes.")
EXTRA_LEVELS = _code("W006", "Extra levels", "Level groups beyond info/levels; ignored.")
MISSING_LEVEL_GROUP = _code("W007", "Missing level group", "A declared level has no group; every node in it is "
                            "absent.")
LEAF_SUM_DIFFERS = _code("W008", "Leaf sizes differ from total_items",
                         "The leaves hold a different number of items than info/total_items says.")
OVERSIZED_LEAF = _code("W009", "Oversized leaf",
                       "A leaf far above its level's median size; a search that visits it decodes every chunk.")

# -- levels and nodes ---------------------------------------------------------------------------
NODES_WITHOUT_ARRAYS = _code("W010", "Node groups without arrays", "Node groups that hold no arrays; search skips "
                             "them.")
NODE_ID_TOO_LARGE = _code("W011", "Node id too large", "A node folder whose id is beyond any index; not part of it.")
TOO_MANY_NODES = _code("W012", "Too many nodes", "A level holds more nodes than min(ns^N, R) allows.")
NODE_ID_OUT_OF_RANGE = _code("W013", "Node id out of range", "Node ids at or above min(ns^N, R).")
IDS_WITHOUT_EMBEDDINGS = _code("E040", "Ids without embeddings", "A node has an ids array but no embeddings.")
EMBEDDINGS_WITHOUT_IDS = _code("E041", "Embeddings without ids",
                               "A node has embeddings but no node_ids or item_ids; upstream reports it as corrupt.")
WRONG_IDS_ARRAY = _code("E042", "Wrong ids array", "A leaf has node_ids, or an internal node has item_ids.")
ROW_COUNT_MISMATCH = _code("E043", "Row counts differ", "A node's embeddings and ids have different row counts.")
EMBEDDINGS_NOT_2D = _code("E044", "Embeddings not 2-D", "A node's embeddings must be (rows, dim).")
DIMENSION_DIFFERS = _code("E045", "Dimension differs", "A node's dimension differs from index_root/embeddings.")
DTYPE_DIFFERS = _code("E046", "Data type differs", "A node's data type differs from index_root/embeddings.")
IDS_NOT_UINT32 = _code("E047", "Ids not uint32", "node_ids and item_ids must be uint32.")
LED_TWICE = _code("E048", "Node led by two rows", "Two parent rows reference the same child node; the first is used.")
NO_PARENT = _code("W014", "No parent", "No row of the level above references this node; search never reaches it.")
CHILD_MISSING = _code("W015", "Referenced node missing",
                      "A parent row references a node that does not exist or has no arrays; search skips it.")

# -- decoded data -------------------------------------------------------------------------------
NOT_A_REPRESENTATIVE = _code("E050", "Node id not a representative",
                             "A node_ids value is not below the number of representatives R.")
ITEM_ID_BEYOND_NEXT = _code("E051", "Item id not below next_item_id", "An item id at or above info/next_item_id.")
DUPLICATE_ITEM_ID = _code("E052", "Duplicate item id", "An item id stored twice, in one leaf or in two.")
ROOT_DIFFERS_FROM_REPS = _code("W020", "Root differs from representatives",
                               "index_root/embeddings rows must be the first representatives.")
ROOT_ENTRY_LEADS_NOWHERE = _code("W021", "Root entries lead nowhere", "Rows of index_root whose node does not exist.")
NOT_UNIT_LENGTH = _code("W022", "Not unit length", "is_normalized is true but a vector is not of length 1.")
NODE_ROWS_DIFFER_FROM_REPS = _code("W023", "Node rows differ from representatives",
                                   "An internal node's embeddings differ from rep_embeddings[node_ids[j]].")
FAN_OUT_TINY = _code("W024", "Fan-out of 1 or 2",
                     "The root, or the nodes of an internal level on average, have only 1 or 2 rows: the tree is "
                     "all depth and no breadth (upstream's tuning guide; nothing upstream checks it). Fewer levels "
                     "or a smaller target_cluster_items give wider nodes.")
UNIT_BUT_NOT_NORMALIZED = _code("I003", "Unit vectors, is_normalized not set",
                                "Every sampled vector has length 1 but info/is_normalized is not set. Distances "
                                "are right either way; set it (build --normalized) only if every vector is unit "
                                "length, for search to use the dot product. The opposite, is_normalized set on "
                                "vectors that are not unit length, is ECPFS-W022: wrong distances.")

# -- searching the index (check --deep) ---------------------------------------------------------
SELF_REACHABILITY = _code("W030", "Items do not reach their own leaf",
                          "Searching with an item's own vector at search_exp 1 does not find its leaf.")
LEAF_STRAYS = _code("W031", "Leaf items stray", "Items of this leaf whose search leaves its branch.")
DEEP_CHECK_FAILED = _code("W032", "Deep check could not run", "check --deep could not search the index.")
SELF_REACHABILITY_OK = _code("I001", "Self-reachability", "Every item checked reaches its own leaf at search_exp 1.")
CHECK_CANCELLED = _code("I002", "Check cancelled", "The check was cancelled; the report is incomplete.")


def finding_code(code: str) -> FindingCode:
    """The row of ``code``; ValueError for a code the table does not hold."""
    try:
        return CODES[code]
    except KeyError:
        raise ValueError(f"unknown finding code {code!r} (see docs/finding-codes.md)") from None


def normalise_code(text: str) -> str | None:
    """The full code a user means by ``text`` ('ECPFS-W005', 'w005'), or None when the table holds
    no such code: the one reading of a typed code, for `check --ignore` and the window's filter."""
    part = text.strip().upper()
    code = part if part.startswith("ECPFS-") else f"ECPFS-{part}"
    return code if code in CODES else None


def markdown() -> str:
    """docs/finding-codes.md: the table for users."""
    lines = ["# Finding codes", "",
             "Every finding of `ecpfs-viewer check` (and of the window's findings table) carries a stable code. "
             "Scripts match on the code, never on the message; `check --ignore CODE` leaves a code out of the "
             "verdict. E is an error (`check` exits 1), W a warning, I a note.", "",
             "This file is generated from `ecpfs_viewer/model/ecpfs/finding_codes.py` "
             "(`python -m ecpfs_viewer.model.ecpfs.finding_codes > docs/finding-codes.md`); a test checks it.", "",
             "| Code | Severity | Title | Meaning |", "|---|---|---|---|"]
    for row in sorted(CODES.values(), key=lambda r: ("EWI".index(r.code[6]), r.code)):
        lines.append(f"| `{row.code}` | {row.severity.value} | {row.title} | {row.explanation} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(markdown())

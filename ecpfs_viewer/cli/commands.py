"""What each subcommand says of itself in `--help`: one table, so the texts read as a set and the
modules that register the commands only add their arguments."""

from __future__ import annotations

import argparse

#: subcommand -> (one line for `ecpfs-viewer --help`, the description of `ecpfs-viewer NAME --help`)
COMMAND_TEXTS: dict[str, tuple[str, str]] = {
    "info": (
        "print the index summary (like `ecp info`, and more)",
        "Print the summary of an ecpfs index: what `ecp info` prints, then format version, dimension, dtype, "
        "fan-out and node statistics per level (from metadata only).",
    ),
    "check": (
        "validate an index (exit 0 ok, 1 errors, 2 cannot open)",
        "Validate an ecpfs index against the format checklist. Exit status: 0 no errors, 1 errors found, "
        "2 cannot open.",
    ),
    "build": (
        "build an index from a .npy file or a Zarr array",
        "Build an ecpfs index (format version 1) the way the upstream builder does. INPUT is a .npy file "
        "(float16/32/64, uint8, int8) or store.zarr#path/to/array.",
    ),
    "add": (
        "add vectors to an index as upstream's insert does (`ecp add-data`); prints their item ids",
        "Add the rows of a .npy file to a local index folder exactly as upstream's insert does (format "
        "document §3.8): ids are reserved first (info/next_item_id), each row is routed root -> leaf with "
        "the build's nearest and tie rules and appended to its leaf narrowed to the index's dtype (a "
        "missing leaf is created, a missing internal node is an error naming it), info/total_items is "
        "written last. Rows are checked like build's input (dimension, type, NaN, unit length when the "
        "index promises is_normalized). An advisory lock keeps other ecpfs-viewer writers out (they wait "
        "--wait seconds, then are refused); upstream's writers take no lock and are not covered. Ctrl+C "
        "after the reservation leaves upstream's id gap (next_item_id > total_items), which `info` "
        "reports. Exit status: 0 added, 1 the rows cannot be added, 2 cannot start, 130 interrupted.",
    ),
    "drift": (
        "how far inserts moved an index from a fresh build of its items; whether to rebuild (exit 1)",
        "Compare an index with a fresh build of its own items (made in a temporary folder and removed, or "
        "--against FRESH): the id gap, each level's node sizes (CV, imbalance factor, leaves over 2x and 4x "
        "the build's target), how often inserted items reach their own leaf against built ones, recall@k "
        "and distance computations at --search-exp on the same queries; then the verdict with its reasons "
        "and the `build` command that rebuilds. Thresholds: docs/drift.md. Exit status: 0 no rebuild "
        "advised, 1 a rebuild is advised (or the report cannot be made), 2 cannot start, 130 interrupted.",
    ),
    "drift-sim": (
        "simulate drift: build on the first N% of a .npy, add the rest, compare with a build of all",
        "For each --built percentage: build on the first N% of the rows, add the rest as upstream's "
        "insert does, and report drift against a build of all rows (recall and distance computations at "
        "--search-exp, leaf balance, own-leaf reachability of inserted items, the verdict). Everything is "
        "made in a temporary folder and removed.",
    ),
    "tune": (
        "build a grid of variants of a .npy and recommend the cheapest reaching a recall target",
        "Build every combination of --levels x --target-cluster-items x --rep-selection as `build` does "
        "(into a temporary folder, removed at the end unless --keep), measure recall@k against cost per "
        "search_exp on held-out rows (left out of every build) or --queries, and print the Pareto frontier "
        "and the cheapest (variant, search_exp) that reaches --recall-target with the `build` command that "
        "makes it.",
    ),
    "search": (
        "eCP search with a trace, exact neighbours and why-missed",
        "eCP search over an index (spec §4); prints item_id<TAB>score lines (lower is better). The query is "
        "the stored vector of --item ID, row --query-row (default 0) of --query-file, or saved query "
        "--saved-query ID. Without a file, --query-row N means --item N.",
    ),
    "recall": (
        "recall@k of eCP search against exact search, per search_exp",
        "Recall@k of eCP search against exact search, one row per search_exp, with the mean and 95th "
        "percentile of leaves visited, milliseconds, distance computations, nodes visited, bytes and "
        "requests read per query. Queries: rows of --queries, --sample N stored items (each excluded from "
        "its own result lists unless --include-self), or by default the index's saved queries (else 100 "
        "sampled items).",
    ),
    "locate": (
        "which leaf and row hold an item, and the path to it",
        "Find an item's leaf, its row there, and the path from index_root, reading only ids arrays (never "
        "leaf embeddings). Exit 1 when no leaf holds the item.",
    ),
    "compare": (
        "compare two indexes: summaries, balance, item migration, recall against cost",
        "Two indexes side by side: their summaries with the differences marked (*), the node-size balance "
        "of each level, how the items both hold moved between leaves (pair agreement, adjusted Rand index, "
        "the largest leaf-to-leaf flows), and recall@k against the mean cost of a search on the same "
        "queries (rows of --queries, else --sample N items both hold, each left out of its own result "
        "lists).",
    ),
    "workload": (
        "replay queries: visits per node, leaves per query, hot leaves, skew",
        "Replay a query set with eCP search and count what it reads: visits per node, leaves scanned per "
        "query, the most visited leaves, and the share of each level's visits that go to its busiest 1% "
        "of nodes (hubness).",
    ),
    "map": (
        "draw every item of an index in 2-D as a PNG, coloured by the tree or a diagnostic",
        "Draw the embedding map of an index to --png: every item placed on two principal axes (a PCA "
        "fitted on a seeded sample of leaves, kept in the cache folder while the leaves are unchanged) and "
        "drawn as a density image, coloured by --colour: level1 (default) or leaf or level (--level N) "
        "clusters, size (the leaf against the median), misses (a recall sweep of --sample N items or "
        "--queries), workload (the same queries replayed), strays (self-reachability) or boundary (boundary "
        "items). The picture carries a title, a legend and what its colours mean. With --against B, index B "
        "is drawn beside it on the same axes (INDEX's PCA; items matched by id), both by leaf, with the items "
        "that moved marked and counted: those outside the B leaf most of their INDEX leaf went to.",
    ),
    "cache": (
        "show or clear the cache folder (item maps, remote metadata)",
        "What ecpfs-viewer keeps of the indexes it opened (item maps; the metadata of remote indexes), each "
        "entry trusted only while its index is unchanged. `list` (the default) prints the folder and its "
        "size; `clear` deletes every entry (the demo index stays). ECPFS_VIEWER_CACHE names another folder, "
        "ECPFS_VIEWER_MAX_CACHE_MB its budget.",
    ),
    "completion": (
        "print a shell completion script (bash or zsh)",
        "Print a completion script for SHELL on stdout. bash: save it as "
        "~/.local/share/bash-completion/completions/ecpfs-viewer (or `source` it); zsh: save it as "
        "_ecpfs-viewer in a folder on $fpath, then run compinit.",
    ),
    "install-desktop": (
        "add the application to the desktop's menu (entry, icons, metainfo) for this user",
        "Install the desktop entry (it opens a folder or a .zip too), the AppStream metainfo and the icons "
        "(48, 128, 256 px and scalable) under --prefix (default $XDG_DATA_HOME, else ~/.local/share), named "
        "after the app id io.github.ecpfs_viewer.ecpfs_viewer, then refresh the desktop's caches when their "
        "tools are installed. --uninstall removes exactly those files.",
    ),
    "schema": (
        "print the JSON Schema of a subcommand's --json output",
        "Print the JSON Schema (draft 2020-12) that COMMAND's --json output follows; `error` is the object "
        "printed instead when a command fails. Every --json output is one object with \"schema_version\"; "
        "--list names what has a schema.",
    ),
}


def add_command(subparsers: argparse._SubParsersAction, name: str) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    """The parser of subcommand ``name`` with its texts from :data:`COMMAND_TEXTS`."""
    summary, description = COMMAND_TEXTS[name]
    parser: argparse.ArgumentParser = subparsers.add_parser(name, help=summary, description=description)
    return parser

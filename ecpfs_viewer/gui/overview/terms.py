"""What the overview's words mean, in a sentence each: the summary's row tooltips and the
"What am I looking at?" lines under it, for a user who has not read the ecpfs format."""

from __future__ import annotations

import html
import re

#: The terms a new user meets first, in the order they help: each with one plain sentence.
GLOSSARY: tuple[tuple[str, str], ...] = (
    ("Representative", "an item chosen to stand for a cluster of similar items; every node below the "
                       "root is led by one, and its vector is what a search compares the query with"),
    ("Fan-out", "how many children a node has at most (the rows of index_root): the tree's branching"),
    ("Leaf", "a node of the last level: it holds the items themselves (item_ids and their embeddings) "
             "instead of child nodes"),
    ("search_exp", "how many leaves a search reads before it may stop: larger finds more true neighbours "
                   "(higher recall) and reads more"),
)

#: Tooltips of the index summary's rows, by their label.
SUMMARY_TIPS: dict[str, str] = {
    "Index": "Which layout the index was written in; a legacy or newer layout may need a rebuild.",
    "Format version": "The ecpfs format version stamped in the index (info/format_version).",
    "Levels": "Levels of nodes below index_root (L); the last level holds the leaves, which hold the items.",
    "Metric": "How closeness is measured: L2 is distance (smaller is closer), IP and cosine are similarity.",
    "Normalized": "Whether the vectors were scaled to length 1 when the index was built.",
    "Total items": "Items stored in the leaves.",
    "Next item id": "The id the next inserted item gets; above Total items means ids were reserved but "
                    "never written.",
    "Representatives (R)": "Representative: " + GLOSSARY[0][1] + ". R is how many were chosen "
                           "(rep_embeddings holds their vectors, rep_item_ids their item ids).",
    "Fan-out (root rows)": "Fan-out: " + GLOSSARY[1][1] + "; the builder makes it ceil(R^(1/L)).",
    "Dimension": "Numbers per vector.",
    "Stored dtype": "How each number is stored.",
    "Node chunk rows": "Rows of a node's arrays stored per chunk (one read).",
    "Representative chunk rows": "Rows of rep_embeddings and rep_item_ids stored per chunk (one read).",
    "Written by": "The program that wrote the index (its _zarrs attribute).",
    "Saved queries": "Searches saved in the index to be resumed (incremental search state).",
}


def guide_link(term: str) -> str:
    """The link of a term to its section of the user guide ('guide:fan-out')."""
    return "guide:" + re.sub(r"[^a-z0-9_]+", "-", term.lower()).strip("-")


def glossary_html() -> str:
    """The glossary as the lines under the summary: a bold term, linked to its section of the user
    guide, then its sentence."""
    lines = "".join(f'<br><a href="{guide_link(term)}"><b>{html.escape(term)}</b></a>: {html.escape(text)}.'
                    for term, text in GLOSSARY)
    return (f'<b>What am I looking at?</b> A tree of clusters searched from the top down '
            f'(<a href="guide:words-of-the-index">more in the user guide</a>).{lines}')

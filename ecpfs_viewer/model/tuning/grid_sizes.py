"""What each variant of a tune grid would take on disk, and which of them the size guard leaves out.

A grid made for a small input (levels 1-3, targets 25-200) holds, for a large one, variants that
`build` calls unusually large (it asks for --force). A tune leaves those out, names them all at
once with their sizes, and builds them only when told to include them anyway: the Tune dialog
shows the list as soon as the input is chosen, the CLI prints it and takes --force.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ecpfs_viewer.model.build.checks import (
    LARGE_BUILD_FLOOR_BYTES,
    LARGE_BUILD_RATIO,
    BuildParams,
    preview_build,
)
from ecpfs_viewer.model.errors import UserError
from ecpfs_viewer.model.formatting import count_noun, format_bytes


def variant_name(params: BuildParams) -> str:
    """A short label: levels, target and (when random) the selection, e.g. 'L3 t50', 'L2 t100 random'."""
    name = f"L{params.levels} t{params.target_cluster_items}"
    return name + (" random" if params.rep_selection == "random" else "")


class GridError(UserError):
    """A variant of the grid that `build` would refuse whatever its size (the message names it)."""


@dataclass(frozen=True)
class VariantSize:
    """One variant's forecast: bytes on disk, files and folders, and whether it is over the size guard."""

    params: BuildParams
    estimated_bytes: int
    files: int
    oversize: bool

    @property
    def name(self) -> str:
        return variant_name(self.params)

    def describe(self) -> str:
        """'L3 t25: about 1.2 GiB, 301,234 files and folders'."""
        return f"{self.name}: about {format_bytes(self.estimated_bytes)}, {self.files:,} files and folders"

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "levels": self.params.levels,
                "target_cluster_items": self.params.target_cluster_items,
                "rep_selection": self.params.rep_selection, "estimated_bytes": self.estimated_bytes,
                "files": self.files}


def grid_sizes(source: str, variants: Sequence[BuildParams]) -> list[VariantSize]:
    """Each variant's forecast from the input's header (the builder's own checks and size guard);
    GridError for a variant `build` would refuse for another reason than its size."""
    sizes = []
    for params in variants:
        preview = preview_build(source, params, None)
        if preview.problems:
            raise GridError(f"{variant_name(params)}: " + "; ".join(str(p) for p in preview.problems))
        sizes.append(VariantSize(params, preview.estimated_bytes, preview.estimated_files, bool(preview.oversize)))
    return sizes


def split_grid(sizes: Sequence[VariantSize], include_oversize: bool) -> tuple[list[VariantSize], list[VariantSize]]:
    """(the variants to build, the variants left out): nothing is left out when told to include them."""
    if include_oversize:
        return list(sizes), []
    return [s for s in sizes if not s.oversize], [s for s in sizes if s.oversize]


def left_out_text(left_out: Sequence[VariantSize], of: int) -> str:
    """All the left-out variants in one sentence, each with its size ('' when none)."""
    if not left_out:
        return ""
    return (f"{count_noun(len(left_out), 'variant')} of {of:,} left out, unusually large for this input "
            f"(over {LARGE_BUILD_RATIO} times the input and {format_bytes(LARGE_BUILD_FLOOR_BYTES)}, "
            f"where `build` asks first): "
            + "; ".join(s.describe() for s in left_out))

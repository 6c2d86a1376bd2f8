"""The layout keeps its shape: no import cycle among ecpfs_viewer's modules, no module over 500 lines.

The import graph is grimp's (the library import-linter checks the layer contracts with), built
from the source, with every import counted: module level, inside functions, and those only made
while type checking, since a cycle of any of them ties the modules into one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import grimp

import ecpfs_viewer

PACKAGE = Path(ecpfs_viewer.__file__).parent
MAX_LINES = 500


def import_cycles(imports: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Every set of modules that import one another in a loop (strongly connected, more than one).

    Tarjan's algorithm without recursion; each cycle sorted, the list sorted by its first module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for start in sorted(imports):
        if start in index:
            continue
        work = [(start, iter(sorted(imports[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            module, pending = work[-1]
            for imported in pending:
                if imported not in index:
                    index[imported] = low[imported] = len(index)
                    stack.append(imported)
                    on_stack.add(imported)
                    work.append((imported, iter(sorted(imports.get(imported, ())))))
                    break
                if imported in on_stack:
                    low[module] = min(low[module], index[imported])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[module])
                if low[module] == index[module]:
                    members = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        members.append(member)
                        if member == module:
                            break
                    if len(members) > 1:
                        cycles.append(sorted(members))
    return sorted(cycles)


def test_import_cycles_are_found() -> None:
    """The search itself: two loops and a chain that leaves one."""
    imports = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a", "e"}, "e": {"d"}, "f": {"a"}}
    assert import_cycles(imports) == [["a", "b", "c"], ["d", "e"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_among_the_modules() -> None:
    graph = grimp.build_graph(ecpfs_viewer.__name__, cache_dir=None)
    imports = {module: graph.find_modules_directly_imported_by(module) for module in graph.modules}
    cycles = import_cycles(imports)
    described = ["\n  ".join(f"{module} imports {', '.join(sorted(set(imports[module]) & set(cycle)))}"
                             for module in cycle) for cycle in cycles]
    assert not cycles, f"{len(cycles)} import cycle(s):\n  " + "\n\n  ".join(described)


def test_no_module_over_the_line_limit() -> None:
    lines = {path.relative_to(PACKAGE).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
             for path in sorted(PACKAGE.rglob("*.py"))}
    too_long = {path: count for path, count in lines.items() if count > MAX_LINES}
    assert not too_long, f"over {MAX_LINES} lines: " + ", ".join(f"{p} ({n})" for p, n in too_long.items())

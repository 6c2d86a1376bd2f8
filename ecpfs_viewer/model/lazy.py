"""Package re-exports imported on first use (PEP 562), so that importing one light submodule
(the path grammar, the saved item map) does not import zarr through its package's other names."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, Sequence[str]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for `package`: each name in ``exports[submodule]`` is taken from
    that submodule when first asked for (then kept as the package's own attribute); any other
    name is a submodule or an AttributeError."""
    owner = {name: submodule for submodule, names in exports.items() for name in names}
    namespace = importlib.import_module(package).__dict__

    def __getattr__(name: str) -> Any:
        submodule = owner.get(name)
        if submodule is None:  # a submodule itself, as ``package.levels`` once was after the imports
            try:
                return importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{package}.{name}":
                    raise
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(f"{package}.{submodule}"), name)
        namespace[name] = value
        return value

    return __getattr__

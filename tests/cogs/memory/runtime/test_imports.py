"""runtime sits below the rest of the core: it imports only ``language`` (a profile's scripts), so ``search`` and the
stores may import it without a loop."""

from __future__ import annotations

import ast
from pathlib import Path

import cogs.memory.runtime as runtime

ALLOWED = {"runtime", "language"}


def core_imports(path: Path) -> set[str]:
    """The parts of the core (``cogs.memory.<part>``) a runtime module imports, type-only imports included."""
    parts: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level:
            # ``from .x`` stays in runtime; ``from ..x`` (or ``from .. import x``) names a part of the core.
            if node.level >= 2:
                parts.update([node.module.split(".")[0]] if node.module else [alias.name for alias in node.names])
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("cogs.memory."):
            parts.add(node.module.split(".")[2])  # type: ignore[union-attr]
        elif isinstance(node, ast.Import):
            parts.update(alias.name.split(".")[2] for alias in node.names if alias.name.startswith("cogs.memory."))
    return parts


def test_runtime_imports_nothing_of_the_core_but_language() -> None:
    modules = sorted(Path(runtime.__file__).parent.glob("*.py"))
    assert len(modules) > 5
    outside = {path.name: core_imports(path) - ALLOWED for path in modules}
    assert {name: parts for name, parts in outside.items() if parts} == {}

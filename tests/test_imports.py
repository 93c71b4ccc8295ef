"""Data flows one way (STYLE.md, item 15): the Discord surface (``cog``), the terminal (``cli``) and the dashboard sit
side by side above the ``Memory`` facade and never import each other; nothing below them imports any of the three.
Only the composition roots (bot.py, launcher.py, cogs/memory/__main__.py) may wire them together.

Read from the source with ``ast``: every import counts, at the top, inside a function or under TYPE_CHECKING.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SURFACES = ("cog", "cli", "dashboard")
# The terminal's composition root: it registers the dashboard's command beside the CLI's own.
ROOTS = frozenset({"cogs.memory.__main__"})
# No crossing is allowed: llm.py (Discord-free) lives beside prompt.py, below all three surfaces.
ALLOWED: frozenset[tuple[str, str]] = frozenset()


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, root: Path = ROOT) -> Iterator[str]:
    """Every module ``path`` imports, as a dotted name: ``from x import y`` names both ``x`` and ``x.y`` (``y`` may
    be a submodule)."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            if node.module:  # ``from . import x`` imports the submodule x, not its package again
                yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def surface_of(module: str) -> str | None:
    """Which of the three surfaces ``module`` belongs to, if any."""
    parts = module.split(".")
    if parts[:2] == ["cogs", "memory"] and len(parts) > 2 and parts[2] in SURFACES:
        return parts[2]
    return None


def crossings(root: Path = ROOT) -> list[str]:
    """Each import of a surface by a module that is neither that surface nor a composition root."""
    found = []
    for path in sorted((root / "cogs" / "memory").rglob("*.py")):
        module = module_name(path, root)
        if module in ROOTS:
            continue
        own = surface_of(module)
        others = {surface_of(target) for target in imported(path, root) if (module, target) not in ALLOWED}
        found += [f"{module} ({own or 'core'}) imports the {other}" for other in sorted(others - {None, own})]
    return found


def test_the_surfaces_and_the_core_never_import_a_surface_beside_or_above_them() -> None:
    assert crossings() == []


def test_a_crossing_is_found_in_a_function_and_under_type_checking(tmp_path: Path) -> None:
    fake = tmp_path / "cogs" / "memory"
    (fake / "cog").mkdir(parents=True)
    (fake / "cog" / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                       "    from ..dashboard import Dashboard\n")
    (fake / "search").mkdir()
    (fake / "search" / "b.py").write_text("def f():\n    from .. import cli\n")
    assert crossings(tmp_path) == ["cogs.memory.cog.a (cog) imports the dashboard",
                                   "cogs.memory.search.b (core) imports the cli"]


def dashboard_graph() -> dict[str, set[str]]:
    modules = {module_name(path): path for path in (ROOT / "cogs" / "memory" / "dashboard").glob("*.py")}
    return {module: {target for target in imported(path) if target in modules and target != module}
            for module, path in modules.items()}


def test_the_dashboards_modules_import_each_other_without_a_circle() -> None:
    graph = dashboard_graph()
    done: set[str] = set()

    def circle_from(module: str, path: tuple[str, ...]) -> tuple[str, ...] | None:
        if module in path:
            return (*path[path.index(module):], module)
        if module in done:
            return None
        for target in sorted(graph[module]):
            if (found := circle_from(target, (*path, module))) is not None:
                return found
        done.add(module)
        return None

    circles = [found for module in sorted(graph) if (found := circle_from(module, ())) is not None]
    assert circles == []

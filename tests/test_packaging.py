"""pyproject.toml against requirements*.txt, its console entry points, and a wheel built from it offline."""

from __future__ import annotations

import importlib
import inspect
import shutil
import subprocess
import sys
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def requirement_lines(path: Path) -> list[str]:
    """The requirements a pip requirements file names itself (no comments, no ``-r`` includes)."""
    lines = (line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line and not line.startswith("-")]


def normalised(requirements: list[str]) -> set[tuple[str, str, str]]:
    """Name, versions and marker of each requirement, spelled one way (``discord.py`` is ``discord-py``)."""
    parsed = [Requirement(text) for text in requirements]
    return {(req.name.lower().replace("_", "-").replace(".", "-"), str(req.specifier), str(req.marker or ""))
            for req in parsed}


def test_pyproject_depends_on_what_requirements_txt_pins() -> None:
    assert normalised(pyproject()["project"]["dependencies"]) == normalised(requirement_lines(ROOT / "requirements.txt"))


def test_the_test_extra_is_what_requirements_dev_txt_adds() -> None:
    dev = ROOT / "requirements-dev.txt"
    assert "-r requirements.txt" in dev.read_text(encoding="utf-8").splitlines()
    assert normalised(pyproject()["project"]["optional-dependencies"]["test"]) == normalised(requirement_lines(dev))


@pytest.mark.parametrize("script", ["discord-memory", "discord-memory-bot"])
def test_each_console_script_names_a_main_that_returns_an_exit_code(script: str) -> None:
    module_name, function_name = pyproject()["project"]["scripts"][script].split(":")
    main = getattr(importlib.import_module(module_name), function_name)
    signature = inspect.signature(main)
    assert (callable(main), signature.return_annotation, list(signature.parameters)) == (True, "int", ["argv"])


def test_the_cli_entry_point_answers_help_with_exit_code_0(capsys: pytest.CaptureFixture[str]) -> None:
    from cogs.memory.__main__ import main

    with pytest.raises(SystemExit) as stopped:
        main(["--help"])
    assert (stopped.value.code, "backup" in capsys.readouterr().out) == (0, True)


def test_a_wheel_builds_offline_with_the_cogs_the_scripts_and_the_dependencies(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "bot.py", "launcher.py"):
        shutil.copy(ROOT / name, source / name)
    # tests/ and bench/ come along to show they are left out of the wheel.
    for folder in ("cogs", "tests", "bench"):
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__", "out"))
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "--quiet",
         "--wheel-dir", str(tmp_path / "wheels"), str(source)],
        capture_output=True, text=True, timeout=300, check=False)
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "wheels").glob("discord_memory_bot-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = next(name.rsplit("/", 1)[0] for name in names if name.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(archive.read(f"{info}/METADATA").decode())
        scripts = archive.read(f"{info}/entry_points.txt").decode()
    tops = {name.split("/", 1)[0] for name in names} - {info}
    runtime = [req for req in metadata.get_all("Requires-Dist") if "extra ==" not in req]
    assert (tops, "cogs/memory/__main__.py" in names, "cogs/memory/rerank/service.py" in names) == (
        {"bot.py", "launcher.py", "cogs"}, True, True)
    assert normalised(runtime) == normalised(requirement_lines(ROOT / "requirements.txt"))
    # The dashboard's templates and stylesheet are package data: without them its pages cannot render.
    assert ("cogs/memory/dashboard/templates/search.html" in names,
            "cogs/memory/dashboard/static/dashboard.css" in names) == (True, True)
    assert ("discord-memory = cogs.memory.__main__:main" in scripts,
            "discord-memory-bot = launcher:main" in scripts) == (True, True)

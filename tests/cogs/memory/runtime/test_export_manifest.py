"""An export's manifest (cogs/memory/runtime/export_manifest.py) on real files: what a start sees cheaply, what only
the whole hash (`check`) sees, and a copied file that is still whole."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cogs.memory.runtime import export_manifest
from cogs.memory.runtime.export_manifest import EDGE_BYTES, MANIFEST, export_problem, write_manifest

FIELDS = {"format": 1, "model": "tiny", "revision": "abc"}
SIZE = 8 << 20  # past the sampled size, so a start reads only part of it


@pytest.fixture
def export(tmp_path: Path) -> Path:
    folder = tmp_path / "export"
    folder.mkdir()
    (folder / "weights.bin").write_bytes(os.urandom(SIZE))
    (folder / "model.onnx").write_bytes(b"graph" * 100)
    write_manifest(folder, FIELDS)
    return folder


def overwrite_keeping_the_time(path: Path, offset: int) -> None:
    """4 KiB changed at ``offset`` and the modification time put back: damage no write through the file system
    would leave (a failing disk, a tool that restores times)."""
    status = path.stat()
    with path.open("r+b") as fh:
        fh.seek(offset)
        fh.write(os.urandom(4096))
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))


def test_a_whole_export_has_no_problem(export: Path) -> None:
    assert export_problem(export, FIELDS) is None and export_problem(export, FIELDS, full=True) is None


def test_the_manifest_records_each_files_size_and_sha256(export: Path) -> None:
    import hashlib

    files = json.loads((export / MANIFEST).read_text())["files"]
    assert files["weights.bin"]["size"] == SIZE
    assert files["weights.bin"]["sha256"] == hashlib.sha256((export / "weights.bin").read_bytes()).hexdigest()


def test_another_model_revision_is_stale(export: Path) -> None:
    assert export_problem(export, {**FIELDS, "revision": "def"}) == "was made with other revision"


def test_damage_between_the_sampled_blocks_is_found_by_the_whole_hash_only(export: Path) -> None:
    overwrite_keeping_the_time(export / "weights.bin", EDGE_BYTES + 100_000)  # between the first two blocks
    assert export_problem(export, FIELDS) is None  # a start's check: the trade-off docs/reranker.md states
    assert export_problem(export, FIELDS, full=True) == (
        "weights.bin does not match its SHA-256 (it changed since the export)")


def test_damage_in_a_sampled_block_is_found_at_start(export: Path) -> None:
    overwrite_keeping_the_time(export / "weights.bin", SIZE - 4096)
    assert export_problem(export, FIELDS) == "weights.bin does not match its checksum (it changed since the export)"


def test_a_written_file_is_hashed_whole_whatever_part_changed(export: Path) -> None:
    with (export / "weights.bin").open("r+b") as fh:
        fh.seek(EDGE_BYTES + 100_000)
        fh.write(os.urandom(4096))
    os.utime(export / "weights.bin", ns=(0, 1))  # a write moves the time on; this one makes sure it moved
    assert export_problem(export, FIELDS) == "weights.bin does not match its SHA-256 (it changed since the export)"


def test_a_file_copied_unchanged_is_hashed_whole_once(export: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    os.utime(export / "weights.bin", ns=(0, 1))  # copied without its times
    hashed: list[str] = []
    real = export_manifest.full_sha256
    monkeypatch.setattr(export_manifest, "full_sha256", lambda path: (hashed.append(path.name), real(path))[1])
    assert export_problem(export, FIELDS) is None and export_problem(export, FIELDS) is None
    assert hashed == ["weights.bin"]


@pytest.mark.parametrize(("change", "problem"), [
    (lambda folder: (folder / "model.onnx").unlink(), "model.onnx is missing"),
    (lambda folder: (folder / MANIFEST).write_text("{"), f"its manifest {MANIFEST} is unreadable"),
    (lambda folder: (folder / MANIFEST).unlink(), f"has no manifest ({MANIFEST})"),
])
def test_what_is_wrong_is_said_in_words(export: Path, change: object, problem: str) -> None:
    change(export)  # type: ignore[operator]
    assert (export_problem(export, FIELDS) or "").startswith(problem)


def test_the_manifest_is_private(export: Path) -> None:
    assert (export / MANIFEST).stat().st_mode & 0o777 == 0o600

"""Index files on odd paths: a folder or a pipe where the file goes; a failed save."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from cogs.memory.vectors.files import IndexFileError
from cogs.memory.vectors.index import VectorIndex

DIM = 8


def small_index() -> VectorIndex:
    index = VectorIndex(DIM, "test-model")
    vectors = np.eye(DIM, dtype=np.float32)
    index.add(np.arange(1, DIM + 1), vectors)
    return index


def test_a_folder_where_the_file_goes_is_a_clear_load_error(tmp_path: Path) -> None:
    (tmp_path / "1.faiss").mkdir()
    with pytest.raises(IndexFileError) as error:
        VectorIndex.load(tmp_path / "1.faiss")
    assert str(error.value) == f"{tmp_path / '1.faiss'} is a folder, not an index file"


def test_a_pipe_where_the_file_goes_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "1.faiss")  # reading it would wait forever for a writer
    with pytest.raises(IndexFileError) as error:
        VectorIndex.load(tmp_path / "1.faiss")
    assert str(error.value) == f"{tmp_path / '1.faiss'} is not a regular file"


def test_a_failed_save_leaves_no_temporary_file(tmp_path: Path) -> None:
    (tmp_path / "1.faiss").mkdir()  # the final rename fails: a folder is in the way
    with pytest.raises(IsADirectoryError):
        small_index().save(tmp_path / "1.faiss", generation=1)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["1.faiss"]

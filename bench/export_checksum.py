"""What checking an ONNX export's checksums costs at start: the whole SHA-256 of a file the size of
Qwen3-Reranker-0.6B's fp32 weights (2.4 GB) against the sampled check a start does (export_manifest.py).

``python -m bench.export_checksum [--gigabytes 2.4] [--dir bench/out]`` writes a file of random bytes there, times
each check twice (the first read after the write finds it in the page cache; ``--cold`` asks the kernel to drop it
first, which needs root), prints JSON and removes the file.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from cogs.memory.runtime.export_manifest import full_sha256, sampled_sha256

CHUNK = 64 << 20


def _write(path: Path, size: int) -> None:
    block = os.urandom(CHUNK)
    with path.open("wb") as file:
        for start in range(0, size, CHUNK):
            file.write(block[: min(CHUNK, size - start)])
        file.flush()
        os.fsync(file.fileno())


def _drop_cache() -> bool:
    try:
        with open("/proc/sys/vm/drop_caches", "w") as control:
            control.write("3\n")
    except OSError:
        return False
    return True


def _timed(function: Callable[[Path], str], path: Path, cold: bool) -> dict[str, float | bool]:
    dropped = _drop_cache() if cold else False
    started, cpu = time.perf_counter(), time.process_time()
    function(path)
    # CPU seconds say what an idle core would take (the file in the page cache); wall seconds what this run took.
    return {"seconds": round(time.perf_counter() - started, 3), "cpu_seconds": round(time.process_time() - cpu, 3),
            "cold": dropped}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gigabytes", type=float, default=2.4)
    parser.add_argument("--dir", type=Path, default=Path(__file__).resolve().parent / "out")
    parser.add_argument("--cold", action="store_true", help="drop the page cache before each check (root only)")
    args = parser.parse_args(argv)
    args.dir.mkdir(parents=True, exist_ok=True)
    size = int(args.gigabytes * 1e9)
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        path = Path(folder) / "weights.bin"
        _write(path, size)
        figures = {
            "bytes": size,
            "cpus": os.cpu_count(),
            "load_average": os.getloadavg()[0],
            "full_sha256": [_timed(full_sha256, path, args.cold) for _ in range(2)],
            "sampled": [_timed(sampled_sha256, path, args.cold) for _ in range(2)],
        }
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()

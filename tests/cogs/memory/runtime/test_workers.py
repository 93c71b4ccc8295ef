"""WorkerThread: the one thread each model runs on."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator

import pytest

from cogs.memory.runtime.workers import WorkerThread


@pytest.fixture
def worker() -> Iterator[WorkerThread]:
    thread = WorkerThread("test-worker")
    yield thread
    thread.stop()


def occupy(worker: WorkerThread) -> threading.Event:
    """Keeps the worker busy until the returned event is set."""
    started, release = threading.Event(), threading.Event()
    worker.submit(lambda: started.set() or release.wait())
    started.wait()
    return release


def test_calls_run_on_the_named_thread(worker: WorkerThread) -> None:
    assert worker.submit(lambda: threading.current_thread().name).result() == "test-worker"


def test_the_most_urgent_call_runs_first_then_submission_order(worker: WorkerThread) -> None:
    release = occupy(worker)
    ran: list[str] = []
    futures = [worker.submit(ran.append, "bulk 1", priority=1), worker.submit(ran.append, "bulk 2", priority=1),
               worker.submit(ran.append, "query", priority=0)]
    release.set()
    for future in futures:
        future.result()
    assert ran == ["query", "bulk 1", "bulk 2"]


def test_a_full_queue_refuses_a_call_that_will_not_wait() -> None:
    worker = WorkerThread("bounded", maxsize=1)
    release = occupy(worker)
    worker.submit(lambda: None)
    try:
        with pytest.raises(queue.Full):
            worker.submit(lambda: None, block=False)
    finally:
        release.set()
        worker.stop()


def test_stopping_finishes_the_queued_calls_first() -> None:
    worker = WorkerThread("stopping")
    release = occupy(worker)
    later = worker.submit(lambda: "done")
    release.set()
    worker.stop()
    assert later.result(timeout=0) == "done"


def test_an_error_goes_to_the_caller_and_the_thread_goes_on(worker: WorkerThread) -> None:
    failed = worker.submit(int, "not a number")
    with pytest.raises(ValueError):
        failed.result()
    assert worker.submit(lambda: "still here").result() == "still here"


def test_a_cancelled_call_never_runs(worker: WorkerThread) -> None:
    release = occupy(worker)
    ran: list[str] = []
    cancelled = worker.submit(ran.append, "cancelled")
    cancelled.cancel()
    release.set()
    worker.submit(lambda: None).result()
    assert ran == []

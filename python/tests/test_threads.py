"""Calls from several threads at once give the same results as the same calls in sequence."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Tuple

import ctxcompact

from conftest import CONVERSATIONS, load


def run(job: Tuple[str, Any, float]) -> str:
    name, conversation, ratio = job
    try:
        result = ctxcompact.compact(conversation, ratio=ratio)
        return json.dumps([name, result.conversation, result.report])
    except ctxcompact.CannotFit as err:
        return json.dumps([name, "cannot_fit", err.report])


def test_threads_give_the_sequential_results() -> None:
    conversations = [(p.stem, load(p)) for p in CONVERSATIONS]
    jobs = [(name, conv, ratio) for ratio in (0.3, 0.6) for name, conv in conversations]
    sequential = [run(job) for job in jobs]
    with ThreadPoolExecutor(max_workers=4) as pool:
        for _ in range(2):
            assert list(pool.map(run, jobs)) == sequential


def test_the_gil_is_released_while_the_work_runs() -> None:
    import threading
    import time

    from ctxcompact import _native

    # A large conversation: the GIL is held only while it is read into Rust and while the
    # result is built, the counting runs without it.
    body = load(next(p for p in CONVERSATIONS if p.stem == "openai-coding-rust-2000"))
    messages = body["messages"] if isinstance(body, dict) else body
    conversation = messages * 3
    done = threading.Event()
    spent = []

    def work() -> None:
        start = time.perf_counter()
        _native.count(conversation, "{}")
        spent.append(time.perf_counter() - start)
        done.set()

    worker = threading.Thread(target=work)
    last = time.perf_counter()
    longest_gap = 0.0
    worker.start()
    while not done.is_set():
        now = time.perf_counter()
        longest_gap = max(longest_gap, now - last)
        last = now
    worker.join()
    # Holding the GIL would stall this loop for the whole call.
    assert spent[0] > 0.05, "the call is too short to tell"
    assert longest_gap < spent[0] / 2, (longest_gap, spent[0])

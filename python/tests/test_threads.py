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

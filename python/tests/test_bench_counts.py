"""The bench compares like with like: its conversations are valid and deterministic, and its
tiktoken o200k counter for LangChain gives ctxcompact's exact count for every message."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import ctxcompact

pytest.importorskip("langchain_core.messages", reason="the langchain extra is not installed")
pytest.importorskip("tiktoken", reason="tiktoken is not installed")

from langchain_core.messages import convert_to_messages  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "bench_trim", Path(__file__).resolve().parents[1] / "bench" / "bench_trim.py"
)
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def test_synthetic_conversations_are_deterministic_valid_and_sized() -> None:
    for size in (50, 1000):
        conversation = bench.agent_conversation(size)
        assert len(conversation) == size
        assert conversation == bench.agent_conversation(size)
        assert ctxcompact.validate(conversation) == []
    assert bench.agent_conversation(300, seed=1) != bench.agent_conversation(300, seed=2)


def test_langchain_counter_equals_ctxcompact_count_per_message() -> None:
    try:
        encoding = bench.o200k()
    except RuntimeError as err:
        pytest.skip(f"SKIPPED: no o200k_base table to load: {err}")
    counter = bench.langchain_counter(encoding)
    conversation = bench.agent_conversation(400, seed=5)
    messages = convert_to_messages(conversation)
    assert [counter(m) for m in messages] == ctxcompact.count(conversation)["messages"]

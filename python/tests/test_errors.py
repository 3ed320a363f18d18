"""Each error class on bad input and bad options, with where the problem is."""

from __future__ import annotations

from typing import Any, Dict, List

import pytest

import ctxcompact


def chat() -> List[Dict[str, Any]]:
    return [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "List the files."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "ls", "arguments": "{\"path\": \".\"}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a.txt\nb.txt\n" * 50},
        {"role": "assistant", "content": "Two files, listed many times."},
        {"role": "user", "content": "Thanks. Now read a.txt."},
    ]


def test_error_classes_form_one_hierarchy() -> None:
    for cls in (ctxcompact.InputError, ctxcompact.CannotFit, ctxcompact.OptionError):
        assert issubclass(cls, ctxcompact.Error)
    assert issubclass(ctxcompact.Error, ValueError)


def test_orphan_tool_result_is_an_input_error_naming_message_and_field() -> None:
    messages = chat()
    messages[3]["tool_call_id"] = "c9"
    with pytest.raises(ctxcompact.InputError) as caught:
        ctxcompact.compact(messages, target=100)
    # The first problem in message order: the call that the changed result no longer answers.
    assert caught.value.message_index == 2
    assert caught.value.field == "tool_calls[0].id"
    assert "c1" in str(caught.value) and "1 more problem" in str(caught.value)
    problems = ctxcompact.validate(messages)
    kinds = [(p["message_index"], p["kind"], p["call_id"]) for p in problems]
    assert (3, "orphan", "c9") in kinds
    assert (2, "unanswered", "c1") in kinds
    assert all(p["text"] and p["field"] for p in problems)
    orphan = next(p for p in problems if p["kind"] == "orphan")
    assert orphan["field"] == "tool_call_id"
    assert orphan["text"] == "tool result refers to unknown call id `c9`"


def test_malformed_field_is_an_input_error_naming_message_and_field() -> None:
    messages = chat()
    messages[2]["tool_calls"][0]["function"]["name"] = 42
    with pytest.raises(ctxcompact.InputError) as caught:
        ctxcompact.count(messages)
    assert caught.value.message_index == 2
    assert caught.value.field is not None and "tool_calls[0]" in caught.value.field


def test_unknown_format_and_non_json_data_are_input_errors() -> None:
    with pytest.raises(ctxcompact.InputError) as caught:
        ctxcompact.compact({"no": "messages"}, target=100)
    assert caught.value.message_index is None
    with pytest.raises(ctxcompact.InputError, match="not JSON data"):
        ctxcompact.compact([{"role": "user", "content": object()}], target=100)
    with pytest.raises(ctxcompact.InputError, match="not JSON data"):
        ctxcompact.compact([{"role": "user", "content": float("nan")}], target=100)
    with pytest.raises(ctxcompact.InputError, match="list of messages"):
        ctxcompact.compact("[]", target=100)


def test_budget_below_the_pinned_minimum_raises_cannot_fit_with_the_report() -> None:
    with pytest.raises(ctxcompact.CannotFit) as caught:
        ctxcompact.compact(chat(), target=20)
    report = caught.value.report
    assert report["action"] == "cannot_fit"
    assert report["budget"] == 20
    assert report["pinned_tokens"] > 20
    assert str(report["pinned_tokens"]) in str(caught.value)


def test_a_call_that_cannot_fit_runs_the_pipeline_once() -> None:
    # See: #56 (the report comes with the failure, not from a second run).
    from ctxcompact import _native

    before = _native.pipeline_runs()
    with pytest.raises(ctxcompact.CannotFit) as caught:
        ctxcompact.compact(chat(), target=20)
    assert _native.pipeline_runs() - before == 1
    assert caught.value.report["action"] == "cannot_fit"
    before = _native.pipeline_runs()
    assert ctxcompact.analyze(chat(), target=20)["action"] == "cannot_fit"
    assert _native.pipeline_runs() - before == 1


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({}, "no budget"),
        ({"target": 100, "ratio": 0.5}, "target and ratio"),
        ({"ratio": 0.5, "trigger": 0.7}, "ratio and trigger"),
        ({"target": -1}, "0 or more"),
        ({"target": 0}, "0 tokens"),
        ({"target": "100"}, "whole number"),
        ({"ratio": 0.0}, "above 0"),
        ({"ratio": float("inf")}, "finite"),
        ({"model": "foo-1"}, "unknown model"),
        ({"target": 100, "strategy": "newest"}, "strategy must be one of"),
        ({"target": 100, "tool_mode": "erase"}, "tool_mode must be one of"),
        ({"target": 100, "tokenizer": "p50k"}, "tokenizer must be one of"),
        ({"target": 100, "format": "yaml"}, "format must be one of"),
        ({"target": 100, "marker": "no"}, "True or False"),
        ({"target": 100, "exclude_tools": [1]}, "tool names"),
    ],
)
def test_bad_options_raise_option_error(kwargs: Dict[str, Any], match: str) -> None:
    with pytest.raises(ctxcompact.OptionError, match=match):
        ctxcompact.compact(chat(), **kwargs)


def test_a_conversation_within_budget_comes_back_unchanged() -> None:
    result = ctxcompact.compact(chat(), target=100_000)
    assert result.report["action"] == "within_budget"
    assert result.conversation == chat()
    assert "within_budget" in repr(result)


# See: #31
@pytest.mark.parametrize(
    ("model", "profile", "window", "source"),
    [
        ("claude-opus-5-5", "claude-opus-5-5", 1_000_000, "catalog"),
        ("gpt-6.1-sol", "gpt-6.1-sol", 272_000, "catalog"),
        ("gemini-3.8-flash", "gemini-3.8-flash", 1_048_576, "catalog"),
        ("claude-opus-5-7-20270101", "claude-opus-5-5", 1_000_000, "family"),
        ("gpt-6.2-codex", "gpt-5-codex", 400_000, "family"),
        ("gemini-4-flash-preview", "gemini-3.8-flash", 1_048_576, "family"),
        ("anthropic.claude-sonnet-5-1-v1:0", "claude-sonnet-5", 1_000_000, "family"),
    ],
)
def test_model_names_resolve_as_the_catalog_resolves_them(
    model: str, profile: str, window: int, source: str
) -> None:
    report = ctxcompact.analyze(chat(), model=model)
    assert report["profile"]["name"] == profile
    assert (report["window"], report["window_source"]) == (window, source)
    assert ctxcompact.count(chat(), model=model)["total"] > 0

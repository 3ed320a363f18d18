"""Every bundled conversation gives the CLI's output and report, as JSON values."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

import pytest

import ctxcompact

from conftest import CONVERSATIONS, load, run_cli

# (CLI flags, the same options as keyword arguments): budgets from tokens, ratios and model
# windows, forced strategies, every tool mode and tool option, other tokenizers, no marker.
OPTION_SETS: List[Any] = [
    (["--ratio", "0.5"], {"ratio": 0.5}),
    (["--target", "2000", "--strategy", "middle"], {"target": 2000, "strategy": "middle"}),
    (
        ["--ratio", "0.3", "--strategy", "oldest", "--no-marker"],
        {"ratio": 0.3, "strategy": "oldest", "marker": False},
    ),
    (["--model", "gpt-4"], {"model": "gpt-4"}),
    (
        ["--model", "local", "--trigger", "0.5", "--target-ratio", "0.3"],
        {"model": "local", "trigger": 0.5, "target_ratio": 0.3},
    ),
    (
        [
            "--ratio", "0.6", "--tool-mode", "drop", "--keep-tool-rounds", "1",
            "--exclude-tools", "bash,read_file", "--clear-tool-inputs",
        ],
        {
            "ratio": 0.6, "tool_mode": "drop", "keep_tool_rounds": 1,
            "exclude_tools": ["bash", "read_file"], "clear_tool_inputs": True,
        },
    ),
    (
        [
            "--ratio", "0.5", "--tokenizer", "cl100k", "--max-tool-output", "100",
            "--clear-at-least", "50", "--tool-mode", "off",
        ],
        {
            "ratio": 0.5, "tokenizer": "cl100k", "max_tool_output": 100,
            "clear_at_least": 50, "tool_mode": "off",
        },
    ),
]
OPTION_IDS = ["ratio", "target-middle", "oldest-no-marker", "model-window", "trigger",
              "tools-drop", "cl100k-tools-off"]


def test_conversations_are_bundled() -> None:
    assert len(CONVERSATIONS) >= 20, "data/conversations is missing"


@pytest.mark.parametrize("path", CONVERSATIONS, ids=lambda p: p.stem)
@pytest.mark.parametrize("flags,kwargs", OPTION_SETS, ids=OPTION_IDS)
def test_compact_equals_cli(cli: Path, tmp_path: Path, path: Path, flags: List[str],
                            kwargs: Dict[str, Any]) -> None:
    report_path = tmp_path / "report.json"
    code, out, err = run_cli(cli, ["compact", str(path), *flags, "--report", str(report_path)])
    conversation = load(path)
    if code == 3:
        with pytest.raises(ctxcompact.CannotFit) as caught:
            ctxcompact.compact(conversation, **kwargs)
        # The CLI writes no report when it cannot fit; analyze gives the same account (it has
        # no --no-marker: without a marker only the figures that do not depend on it agree).
        analyze_flags = [flag for flag in flags if flag != "--no-marker"]
        code, out, err = run_cli(cli, ["analyze", str(path), *analyze_flags, "--json"])
        assert code == 0, err
        report, expected = caught.value.report, json.loads(out)
        assert report["action"] == expected["action"] == "cannot_fit"
        if analyze_flags == flags:
            assert report == expected
        else:
            for key in ("budget", "tokens_before", "messages_before", "format", "tokenizer"):
                assert report[key] == expected[key], key
        return
    assert code == 0, err
    result = ctxcompact.compact(conversation, **kwargs)
    assert result.conversation == json.loads(out)
    assert result.report == load(report_path)
    assert result.messages == (
        result.conversation if isinstance(result.conversation, list)
        else result.conversation["messages"]
    )


@pytest.mark.parametrize("path", CONVERSATIONS, ids=lambda p: p.stem)
def test_analyze_count_validate_and_trim_tools_equal_cli(cli: Path, tmp_path: Path,
                                                          path: Path) -> None:
    conversation = load(path)
    code, out, err = run_cli(cli, ["analyze", str(path), "--ratio", "0.4", "--json"])
    assert code == 0, err
    assert ctxcompact.analyze(conversation, ratio=0.4) == json.loads(out)

    for tokenizer in ("o200k", "cl100k", "chars", "llama3", "claude-sonnet"):
        code, out, err = run_cli(cli, ["count", str(path), "--tokenizer", tokenizer, "--json"])
        assert code == 0, err
        assert ctxcompact.count(conversation, tokenizer=tokenizer) == json.loads(out)
    code, out, err = run_cli(cli, ["count", str(path), "--model", "claude-sonnet-4", "--json"])
    assert ctxcompact.count(conversation, model="claude-sonnet-4") == json.loads(out)

    code, out, err = run_cli(cli, ["validate", str(path)])
    assert code == 0, err
    assert ctxcompact.validate(conversation) == []

    report_path = tmp_path / "report.json"
    code, out, err = run_cli(
        cli, ["trim-tools", str(path), "--keep-tool-rounds", "2", "--report", str(report_path)]
    )
    assert code == 0, err
    trimmed = ctxcompact.trim_tools(conversation, keep_tool_rounds=2)
    assert trimmed.conversation == json.loads(out)
    assert trimmed.report == load(report_path)


def test_compact_is_deterministic_and_leaves_its_input_alone() -> None:
    path = max(CONVERSATIONS, key=lambda p: p.stat().st_size)
    conversation = load(path)
    before = json.dumps(conversation)
    first = ctxcompact.compact(conversation, ratio=0.5)
    second = ctxcompact.compact(conversation, ratio=0.5)
    assert json.dumps(first.conversation) == json.dumps(second.conversation)
    assert first.report == second.report
    assert json.dumps(conversation) == before
    assert first.report["tokens_after"] <= first.report["budget"]


def test_catalog_and_calibration_files_equal_the_clis_flags(cli: Path, tmp_path: Path) -> None:
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps({"models": [{
        "name": "house-model", "provider": "anthropic", "context_window": 4000,
        "tokenizer": "claude-opus", "strategy": "middle", "reason": "a house model",
    }]}))
    shipped = json.loads((Path(__file__).parents[2] / "data" / "calibration.json").read_text())
    for family in shipped["families"]:
        family["tokens_per_o200k"] *= 1.5
    calibration = tmp_path / "calibration.json"
    calibration.write_text(json.dumps(shipped))
    path = CONVERSATIONS[0]
    conversation = load(path)
    files = ["--model", "house-model", "--catalog", str(catalog), "--calibration",
             str(calibration)]
    code, out, err = run_cli(cli, ["count", str(path), *files, "--json"])
    assert code == 0, err
    counted = ctxcompact.count(conversation, model="house-model", catalog=catalog,
                               calibration=calibration)
    assert counted == json.loads(out)
    assert counted != ctxcompact.count(conversation, model="house-model", catalog=catalog)
    code, out, err = run_cli(cli, ["analyze", str(path), *files, "--json"])
    assert code == 0, err
    assert ctxcompact.analyze(conversation, model="house-model", catalog=str(catalog),
                              calibration=str(calibration)) == json.loads(out)
    with pytest.raises(ctxcompact.OptionError, match="absent.json: model catalog: cannot read"):
        ctxcompact.count(conversation, model="house-model", catalog=tmp_path / "absent.json")
    with pytest.raises(ctxcompact.OptionError, match="catalog must be a file path"):
        ctxcompact.count(conversation, catalog=3)

"""``archive=``: the removed history written where the markers say, as ``--archive`` does."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, Dict, List

import pytest

import ctxcompact

from conftest import CONVERSATIONS


def named_file(message: Dict[str, Any], files: Dict[str, str]) -> str | None:
    """The content of the first archive file of ``files`` the notes of ``message`` name."""
    text = json.dumps(message, ensure_ascii=False)
    for path, content in files.items():
        if f"archived in {path}, line" in text:
            return content
    return None


def reassemble(messages: List[Dict[str, Any]], files: Dict[str, str]) -> List[Dict[str, Any]]:
    out: List[Dict[str, Any]] = []
    for message in messages:
        content = named_file(message, files)
        if content is None:
            out.append(message)
        else:
            out.extend(json.loads(line) for line in content.splitlines())
    return out


def test_archive_gives_back_the_input_and_matches_the_cli(tmp_path: Path, cli: Path) -> None:
    path = next(p for p in CONVERSATIONS if p.name == "openai-coding-python-500.json")
    body = json.loads(path.read_text())
    result = ctxcompact.compact(json.loads(path.read_text()), ratio=0.3, archive=tmp_path / "a")
    paths = result.report["archive"]
    assert paths, "nothing archived"
    files = {p: Path(p).read_text() for p in paths}
    assert reassemble(result.messages, files) == body["messages"]
    out = tmp_path / "out.json"
    run = subprocess.run(
        [str(cli), "compact", str(path), "--ratio", "0.3", "--archive", str(tmp_path / "a"),
         "-o", str(out), "-q"],
        capture_output=True,
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(out.read_text())["messages"] == result.messages


def test_archive_options_are_checked(tmp_path: Path) -> None:
    path = next(p for p in CONVERSATIONS if p.name == "openai-coding-python-500.json")
    body = json.loads(path.read_text())
    with pytest.raises(ctxcompact.OptionError, match="archive"):
        ctxcompact.compact(body, ratio=0.3, archive=12)  # type: ignore[arg-type]
    blocked = tmp_path / "blocked"
    blocked.write_text("not a folder")
    with pytest.raises(ctxcompact.OptionError, match="cannot write the archive"):
        ctxcompact.compact(body, ratio=0.3, archive=blocked)
    assert blocked.read_text() == "not a folder"

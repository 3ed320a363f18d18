"""Shared fixtures: the project root, the bundled conversations and the ctxcompact CLI."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, List, Tuple

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONVERSATIONS = sorted((ROOT / "data" / "conversations").glob("*.json"))


@pytest.fixture(scope="session")
def cli() -> Path:
    """The release CLI, built once per session (``CTXCOMPACT_CLI`` names a prebuilt one)."""
    given = os.environ.get("CTXCOMPACT_CLI")
    if given:
        return Path(given)
    subprocess.run(
        ["cargo", "build", "--release", "--locked", "--bin", "ctxcompact"],
        cwd=ROOT,
        check=True,
    )
    return ROOT / "target" / "release" / "ctxcompact"


def run_cli(cli: Path, args: List[str]) -> Tuple[int, str, str]:
    """Runs the CLI: its exit code, standard output and standard error."""
    done = subprocess.run([str(cli), *args], capture_output=True, text=True, cwd=ROOT)
    return done.returncode, done.stdout, done.stderr


def load(path: Path) -> Any:
    with open(path, encoding="utf-8") as file:
        return json.load(file)

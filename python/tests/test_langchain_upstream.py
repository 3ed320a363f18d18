"""langchain-core's own trim_messages tests, run with only the import swapped for ctxcompact's.

The tests are not in this repository: `.ci/run` downloads langchain-core's source distribution
(pinned) from PyPI and names its `tests/unit_tests/messages/test_utils.py` in
`CTXCOMPACT_LANGCHAIN_CORE_TESTS`. Without it the test skips, saying why.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Dict

import pytest

pytest.importorskip("langchain_core", reason="the langchain extra is not installed")

# The version whose tests these are; .ci/run downloads this one.
LANGCHAIN_CORE = "1.8.3"
# The number of trim_messages tests in that version's test_utils.py.
UPSTREAM_TESTS = 21
# Upstream tests expected to fail, each with its reason (kept in sync with docs/python.md):
# those whose expected output separates a tool call from its results or drops the first
# request. langchain-core 1.8.3's trim_messages tests have no tool message, so none.
EXCEPTIONS: Dict[str, str] = {}

IMPORT = "    merge_message_runs,\n    trim_messages,\n)\n"
SWAPPED = "    merge_message_runs,\n)\nfrom ctxcompact.langchain import trim_messages\n"


def test_langchain_cores_own_trim_messages_tests_pass_with_the_import_swapped() -> None:
    given = os.environ.get("CTXCOMPACT_LANGCHAIN_CORE_TESTS")
    if not given:
        pytest.skip(
            "CTXCOMPACT_LANGCHAIN_CORE_TESTS is not set: .ci/run downloads langchain-core "
            f"{LANGCHAIN_CORE}'s sdist and names its tests/unit_tests/messages/test_utils.py"
        )
    import langchain_core

    assert langchain_core.__version__ == LANGCHAIN_CORE
    source = Path(given).read_text(encoding="utf-8")
    assert source.count(IMPORT) == 1, "the upstream import of trim_messages has moved"
    # A folder of its own: pytest's -k also matches the names of the folders above a test.
    folder = Path(tempfile.mkdtemp(prefix="upstream-"))
    swapped = folder / "test_upstream.py"
    text = source.replace(IMPORT, SWAPPED)
    # The one name bound to trim_messages is ctxcompact's.
    assert "trim_messages," not in text and "import trim_messages" not in text.replace(
        "from ctxcompact.langchain import trim_messages", ""
    )
    swapped.write_text(text, encoding="utf-8")
    report = folder / "report.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "trim_messages",
         f"--junitxml={report}", str(swapped)],
        cwd=folder,
        capture_output=True,
        check=False,
    )
    root = ElementTree.parse(report).getroot()
    shutil.rmtree(folder)
    outcomes: Dict[str, str] = {}
    for case in root.iter("testcase"):
        failed = case.find("failure") is not None or case.find("error") is not None
        skipped = case.find("skipped") is not None
        outcomes[case.get("name", "")] = "failed" if failed else "skipped" if skipped else "passed"
    assert len(outcomes) == UPSTREAM_TESTS
    assert all(name.startswith("test_trim_messages") for name in outcomes)
    failed = sorted(name for name, outcome in outcomes.items() if outcome != "passed")
    assert failed == sorted(EXCEPTIONS)

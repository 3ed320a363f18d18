"""Checks that the project's instruction file survived the proxy's compactions (issue 33,
item 1): every body the proxy sent compacted (one holding a ctxcompact note: the client's own
history never holds one) holds RULE, the file's text, verbatim; there are as many as the
ledger's compacted requests, and each of those ledger lines lists FILE in its
`instruction_files`; and the largest body the client sent that went upstream as sent,
compacted to 75% by the CLI, keeps RULE and its report lists FILE among the pinned
instruction files.

Usage: pinned.py CTXCOMPACT RECORD_DIR LEDGER KIND FILE RULE
"""

import json
import os
import subprocess
import sys
import tempfile

ctxcompact, record, ledger, kind, file, rule = sys.argv[1:7]


def strings(value):
    """Every string a JSON value holds."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)


names = sorted(f for f in os.listdir(record) if f.endswith(f"-{kind}.json"))
held, compacted, as_sent = 0, [], []
for name in names:
    path = os.path.join(record, name)
    found = list(strings(json.load(open(path))))
    if any(s.startswith("[ctxcompact:") or "\n[ctxcompact:" in s for s in found):
        compacted.append(name)
        held += any(rule in s for s in found)
    elif any(rule in s for s in found):
        as_sent.append((os.path.getsize(path), name))
lines = [json.loads(line) for line in open(ledger)]
expected = sum(1 for l in lines if l["action"] == "compacted")
assert compacted, "no body was sent compacted"
assert held == len(compacted), f"{len(compacted) - held} compacted bodies lack {file}'s text"
assert len(compacted) == expected, f"{len(compacted)} bodies hold a note, the ledger compacted {expected}"
unlisted = [l for l in lines if l["action"] == "compacted"
            and file not in [f["file"] for f in l.get("instruction_files", [])]]
assert not unlisted, f"{len(unlisted)} compacted ledger lines do not list {file}: {unlisted[0]}"
assert as_sent, f"no body the client sent holds {file}'s text"
largest = max(as_sent)[1]
with tempfile.TemporaryDirectory() as folder:
    output = os.path.join(folder, "out.json")
    run = subprocess.run([ctxcompact, "compact", "--format", kind, "--ratio", "0.75", "--report", "-",
                          "-o", output, "--quiet", os.path.join(record, largest)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stderr)
    kept = any(rule in s for s in strings(json.load(open(output))))
assert report["action"] == "compacted", f"the CLI left {largest} {report['action']}"
assert kept, f"the CLI's compaction of {largest} lost {file}'s text"
pinned = [f for f in report.get("instruction_files", []) if f["file"] == file]
assert pinned, f"the report lists no {file}: {report.get('instruction_files')}"
print(f"pinned: {file} ({len(rule)} characters) verbatim in all {held} bodies sent compacted, "
      f"each listed in its ledger line; "
      f"{largest} compacted to 75% by the CLI keeps it, its report pinning message "
      f"{pinned[0]['message']} ({pinned[0]['agent']}, `{pinned[0]['pattern']}`)")

"""Checks a client run through `ctxcompact proxy`: every recorded upstream body is valid and
within the window, and the ledger shows the compactions asked for.

Usage: check.py CTXCOMPACT RECORD_DIR LEDGER WINDOW MIN_COMPACTIONS KIND...
"""

import json
import os
import subprocess
import sys

ctxcompact, record, ledger, window, minimum = sys.argv[1:6]
kinds = sys.argv[6:]
window, minimum = int(window), int(minimum)
formats = {"anthropic": "anthropic", "openai": "openai", "responses": "responses"}
bodies = sorted(f for f in os.listdir(record) if f.endswith(".json") and f.split("-", 1)[1][:-5] in kinds)
assert bodies, f"no {kinds} request reached upstream"
for name in bodies:
    path = os.path.join(record, name)
    fmt = formats[name.split("-", 1)[1][:-5]]
    subprocess.run([ctxcompact, "validate", "--format", fmt, path], check=True, capture_output=True)
lines = [json.loads(line) for line in open(ledger)]
read = [l for l in lines if l["action"] != "passthrough"]
bad = [l for l in read if l["action"] == "failed_open"]
assert not bad, f"failed open: {[l['reason'] for l in bad]}"
over = [l for l in read if (l["tokens_forwarded"] or 0) > window]
assert not over, f"over the window: {[l['tokens_forwarded'] for l in over]}"
compactions = max((l["compactions"] or 0) for l in read)
assert compactions >= minimum, f"{compactions} compactions, expected at least {minimum}"
compacted = sum(1 for l in read if l["action"] == "compacted")
largest = max(l["tokens_received"] or 0 for l in read)
print(f"{len(bodies)} upstream bodies valid, {len(read)} read by the proxy, none over {window} "
      f"tokens (largest received {largest}), {compacted} sent compacted, {compactions} compactions")

"""Checks a client run through `ctxcompact proxy`: every recorded upstream body is valid and
within the window, no request failed open, and the ledger shows the compactions asked for.

The window of a ledger line is the one it names (`window`), else WINDOW. A body that breaks a
pairing rule may reach upstream only as the client sent it: one the proxy forwarded as received
under the trigger (its ledger line says so), such as Gemini CLI's loop check, which sends a
slice of its history that opens with the model.

Usage: check.py CTXCOMPACT RECORD_DIR LEDGER WINDOW MIN_COMPACTIONS KIND...
"""

import json
import os
import subprocess
import sys

ctxcompact, record, ledger, window, minimum = sys.argv[1:6]
kinds = sys.argv[6:]
window, minimum = int(window), int(minimum)
bodies = sorted(f for f in os.listdir(record)
                if f.endswith(".json") and f.split("-", 1)[1][:-5] in kinds)
assert bodies, f"no {kinds} request reached upstream"
invalid = []
for name in bodies:
    path = os.path.join(record, name)
    kind = name.split("-", 1)[1][:-5]
    run = subprocess.run([ctxcompact, "validate", "--format", kind, path], capture_output=True)
    if run.returncode != 0:
        invalid.append(name)
lines = [json.loads(line) for line in open(ledger)]
read = [l for l in lines if l["action"] != "passthrough"]
bad = [l for l in read if l["action"] == "failed_open"]
assert not bad, f"failed open: {[l['reason'] for l in bad]}"
as_received = [l for l in read if l["action"] == "forwarded" and "forwarded as received" in (l["reason"] or "")]
assert len(invalid) <= len(as_received), f"invalid upstream bodies: {invalid}"
over = [l for l in read if (l["tokens_forwarded"] or 0) > l.get("window", window)]
assert not over, f"over the window: {[(l['tokens_forwarded'], l.get('window', window)) for l in over]}"
compactions = max((l["compactions"] or 0) for l in read)
assert compactions >= minimum, f"{compactions} compactions, expected at least {minimum}"
compacted = [l for l in read if l["action"] == "compacted"]
largest = max(l["tokens_received"] or 0 for l in read)
models = sorted({l["model"] for l in read if l["model"]})
windows = sorted({l.get("window", window) for l in compacted})
print(f"{len(bodies)} upstream bodies valid ({len(invalid)} of the client's own forwarded as "
      f"received), {len(read)} read by the proxy, none failed open, none over its window "
      f"{windows}; models {models}; largest received {largest} tokens, {len(compacted)} sent "
      f"compacted (largest {max((l['tokens_forwarded'] for l in compacted), default=0)}), "
      f"{compactions} compactions")

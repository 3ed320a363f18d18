"""Checks that a proxied session rewrote its history at most on every second compacted request:
after a compaction the body is far enough under the trigger that the calls which follow only
append (issue 41: with the agent's own part above the target, every call had compacted).

Usage: rewrites.py LEDGER
"""

import json
import sys

lines = [json.loads(line) for line in open(sys.argv[1])]
compacted = [l for l in lines if l["action"] == "compacted"]
compactions = max((l["compactions"] or 0) for l in lines)
budgets = sorted({l.get("budget") for l in compacted if l.get("budget")})
print(f"{compactions} compactions for {len(compacted)} compacted requests; budgets {budgets}")
assert compacted, "no request was compacted"
assert 2 * compactions <= len(compacted), "a compaction on more than every second request"

"""Reads `GET /metrics` of a running `ctxcompact proxy` with prometheus-client's own parser
(pinned in run.sh) and checks every counter against the proxy's ledger (issue 55): requests by
action and API, fail-open kinds, tokens received, forwarded and saved, compactions run,
reported usage, upstream answers by status class, and the histogram of the time the proxy
adds (its count, and its sum against the ledger's `proxy_ms`).

Usage: metrics.py PROXY_URL LEDGER
"""

import json
import re
import sys
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

proxy, ledger = sys.argv[1:3]
with urllib.request.urlopen(proxy + "/metrics", timeout=30) as response:
    content_type = response.headers["content-type"]
    text = response.read().decode()
assert content_type == "text/plain; version=0.0.4; charset=utf-8", content_type
families = list(text_string_to_metric_families(text))
for family in families:
    assert family.name.startswith("ctxcompact_"), family.name
    assert family.documentation, f"{family.name} has no HELP"
    assert family.type in ("counter", "gauge", "histogram"), (family.name, family.type)
samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
           for family in families for s in family.samples}
for name, _ in samples:
    family = next(f for f in families if name.startswith(f.name))
    if family.type == "counter":
        assert name.endswith("_total"), name


def sample(name, **labels):
    key = (name, tuple(sorted(labels.items())))
    assert key in samples, f"no {key}"
    return samples[key]


def api(line):
    """The API a ledger line's request was read as: by its path, for the POSTs the proxy reads."""
    path = line["path"]
    if line["method"] != "POST":
        return "other"
    if path == "/v1/messages":
        return "anthropic"
    if path == "/v1/chat/completions":
        return "openai"
    if path == "/v1/responses":
        return "responses"
    if re.search(r"/models/[^/]+:(stream)?[gG]enerateContent$", path):
        return "gemini"
    return "other"


lines = [json.loads(line) for line in open(ledger)]
assert lines, "an empty ledger"
for action in ("forwarded", "compacted", "passthrough", "failed_open"):
    for kind in ("anthropic", "openai", "responses", "gemini", "other"):
        expected = sum(1 for l in lines if l["action"] == action and api(l) == kind)
        found = sample("ctxcompact_requests_total", action=action, api=kind)
        assert found == expected, (action, kind, found, expected)
kinds = {l.get("fail_open") for l in lines} - {None}
for kind in kinds:
    expected = sum(1 for l in lines if l.get("fail_open") == kind)
    assert sample("ctxcompact_failed_open_total", reason=kind) == expected, kind


def total(field):
    return sum(l.get(field) or 0 for l in lines)


assert sample("ctxcompact_received_tokens_total") == total("tokens_received")
assert sample("ctxcompact_forwarded_tokens_total") == total("tokens_forwarded")
saved = sum(l["tokens_received"] - l["tokens_forwarded"] for l in lines if l["action"] == "compacted")
assert sample("ctxcompact_saved_tokens_total") == saved
assert sample("ctxcompact_compactions_total") == total("compactions_run")
usage = [l["usage"] for l in lines if l.get("usage")]
reported_input = sum(u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]
                     for u in usage)
assert sample("ctxcompact_reported_input_tokens_total") == reported_input
assert sample("ctxcompact_reported_output_tokens_total") == sum(u["output_tokens"] for u in usage)
# Sent upstream: every line with a status but the upgrades the proxy refused itself (426);
# answered: those but the ones upstream never answered (the proxy's 502).
sent = [l for l in lines if l["status"] is not None and l["status"] != 426]
unreachable = [l for l in sent if "upstream unreachable" in (l.get("reason") or "")]
assert sample("ctxcompact_upstream_unreachable_total") == len(unreachable)
for digit in range(1, 6):
    expected = sum(1 for l in sent if l["status"] // 100 == digit and l not in unreachable)
    assert sample("ctxcompact_upstream_responses_total", **{"class": f"{digit}xx"}) == expected, digit
assert sample("ctxcompact_proxy_added_seconds_count") == len(sent)
assert sample("ctxcompact_proxy_added_seconds_bucket", le="+Inf") == len(sent)
added = sum(l["proxy_ms"] for l in sent) / 1000
assert abs(sample("ctxcompact_proxy_added_seconds_sum") - added) < 1e-6 * max(1, len(sent)), added
median = sorted(l["proxy_ms"] for l in sent)[len(sent) // 2]
print(f"metrics: {len(families)} families read by prometheus-client, every counter equal to the "
      f"ledger's {len(lines)} lines ({len(sent)} answered upstream; {sample('ctxcompact_compactions_total'):.0f} "
      f"compactions, {saved} tokens saved; median time added {median:.2f} ms)")

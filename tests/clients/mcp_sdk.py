"""`ctxcompact mcp` through the official MCP Python SDK (issue 53).

Compacts a recording with `ctxcompact compact --archive DIR`, then, as a real MCP client over
stdio (both eras: `server/discover` and the `initialize` handshake), lists the server's tools,
recalls every handle the output's notes name and checks each archived message equals the
input's at its place (the file's lines are a run of the input's messages), and finds a removed
request by a phrase of it. Bad handles are tool errors naming them.

Usage: python mcp_sdk.py CTXCOMPACT RECORDING... (each that exists; one that does not is said
and skipped, and at least one must exist). A corpus recording whose removed user messages are
all harness text (`<task-notification>`…) is searched by that text; the bundled conversation
removes a person's request.
"""

import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile

from mcp import Client
from mcp.client.stdio import StdioServerParameters

HANDLE = re.compile(r"; handle ([0-9a-f]{12}/[0-9a-f]{12})")


def messages_of(value):
    return value if isinstance(value, list) else value["messages"]


def strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)


def text_of(result):
    return "".join(block.text for block in result.content if block.type == "text")


async def check(cli, archive, inputs, output, mode):
    server = StdioServerParameters(command=cli, args=["mcp", "--archive-dir", archive])
    async with Client(server, mode=mode) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert tools == {"recall", "search"}, tools
        handles = sorted({h for text in strings(output) for h in HANDLE.findall(text)})
        assert handles, "the output names no handle"
        # Every file `compact --archive` wrote is named by a handle of the output.
        files = sorted(
            f"{conversation}/{name[: -len('.jsonl')]}"
            for conversation in os.listdir(archive)
            for name in os.listdir(os.path.join(archive, conversation))
        )
        assert files == handles, (files, handles)
        canonical = [json.dumps(m, sort_keys=True) for m in inputs]
        recalled = 0
        for handle in handles:
            result = await client.call_tool("recall", {"handle": handle})
            assert not result.is_error, text_of(result)
            lines = [json.loads(line) for line in text_of(result).splitlines()]
            assert lines, handle
            # The archived messages are a run of the input's, each equal to the input's.
            want = [json.dumps(m, sort_keys=True) for m in lines]
            starts = [i for i, m in enumerate(canonical) if m == want[0]]
            assert any(canonical[i : i + len(want)] == want for i in starts), handle
            recalled += len(lines)
        # A removed request, found by a phrase of it.
        kept = {json.dumps(m, sort_keys=True) for m in messages_of(output)}
        removed = [
            m for m in inputs
            if m.get("role") == "user" and isinstance(m.get("content"), str)
            and len(m["content"].split()) >= 2 and json.dumps(m, sort_keys=True) not in kept
        ]
        assert removed, "no removed request to search for"
        # A person's request rather than harness text (`<task-notification>…`), where there is one.
        removed = [m for m in removed if not m["content"].startswith(("<", "["))] or removed
        request = removed[len(removed) // 2]["content"]
        phrase = " ".join(request.split()[:6])
        result = await client.call_tool("search", {"words": phrase})
        hits = text_of(result)
        assert not result.is_error, hits
        found = HANDLE.findall("; " + hits.replace("\nhandle ", "\n; handle "))
        assert found, hits
        back = []
        for handle in found:
            text = text_of(await client.call_tool("recall", {"handle": handle}))
            back += [json.loads(line) for line in text.splitlines()]
        assert any(m.get("content") == request for m in back), (phrase, hits)
        # Bad input: a tool error naming what was asked, the server still serving.
        for bad in ["nonsense", "000000000000/000000000000"]:
            result = await client.call_tool("recall", {"handle": bad})
            assert result.is_error and bad in text_of(result), text_of(result)
        return len(handles), recalled, phrase


def main():
    cli, recordings = sys.argv[1], sys.argv[2:]
    for absent in (r for r in recordings if not os.path.exists(r)):
        print(f"mcp_sdk: SKIPPED {absent}: absent", flush=True)
    present = [r for r in recordings if os.path.exists(r)]
    assert present, "no recording to compact"
    for recording in present:
        run(cli, recording)


def run(cli, recording):
    with tempfile.TemporaryDirectory() as tmp:
        archive = os.path.join(tmp, "archive")
        out = os.path.join(tmp, "out.json")
        subprocess.run(
            [cli, "compact", recording, "--ratio", "0.15", "--archive", archive, "-o", out],
            check=True,
        )
        with open(recording) as f:
            inputs = messages_of(json.load(f))
        with open(out) as f:
            output = json.load(f)
        for mode in ["auto", "legacy"]:
            handles, recalled, phrase = asyncio.run(check(cli, archive, inputs, output, mode))
            print(
                f"mcp_sdk ({mode}): {recording}: {handles} handles recalled exactly "
                f"({recalled} messages); found a removed request by {phrase!r}",
                flush=True,
            )


if __name__ == "__main__":
    main()

"""Load figures for `ctxcompact proxy` (issue 22), on this machine, all on 127.0.0.1.

1. The time the proxy adds on an appending 200-call session (OpenAI Chat, one tool round of
   about 1,000 tokens per call, --window 60000 so that it compacts several times): the
   ledger's `proxy_ms` (body received → request sent upstream), median and p99, for calls
   under the trigger and for the calls that compacted; and the end-to-end latency through the
   proxy less the same request sent straight to the upstream.
2. Pass-through requests per second for 100 KB bodies, N client threads with keep-alive: to a
   path the proxy does not read, and to /v1/chat/completions under the trigger (read, counted,
   forwarded byte for byte).
3. Resident memory with 1,000 conversations cached (each 40 messages, about 25 KB).

The client, the scripted upstream (asyncio) and the proxy share the machine's cores.
Usage: bench.py CTXCOMPACT [--threads N] [--seconds S]
"""

import argparse
import asyncio
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ANSWER = json.dumps({"id": "c", "object": "chat.completion", "choices": [
    {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 1}}).encode()


async def handle(reader, writer):
    """A keep-alive HTTP/1.1 upstream answering every request with a small JSON body."""
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            if length:
                await reader.readexactly(length)
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                         + str(len(ANSWER)).encode() + b"\r\n\r\n" + ANSWER)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


def start_upstream():
    ready = threading.Event()
    box = {}

    def run():
        loop = asyncio.new_event_loop()
        server = loop.run_until_complete(asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024))
        box["port"] = server.sockets[0].getsockname()[1]
        ready.set()
        loop.run_forever()

    threading.Thread(target=run, daemon=True).start()
    ready.wait()
    return box["port"]


def start_proxy(binary, upstream, ledger, window):
    proc = subprocess.Popen(
        [binary, "proxy", "--listen", "127.0.0.1:0", "--window", str(window), "--ledger", ledger,
         "--openai-upstream", f"http://127.0.0.1:{upstream}",
         "--anthropic-upstream", f"http://127.0.0.1:{upstream}"],
        stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    port = int(line.rsplit(":", 1)[1])
    return proc, port


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def percentile(values, share):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(share * (len(values) - 1))))]


def session_bodies(calls, seed=0):
    filler = " ".join(f"word{i % 97}" for i in range(700))
    messages = [{"role": "system", "content": "You are a coding agent."},
                {"role": "user", "content": f"task {seed}: read the files and fix the bug"}]
    bodies = []
    for n in range(calls):
        bodies.append(json.dumps({"model": "gpt-4o", "messages": messages}).encode())
        messages = messages + [
            {"role": "assistant", "content": None, "tool_calls": [{"id": f"call_{seed}_{n}", "type": "function",
                                                                   "function": {"name": "read", "arguments": json.dumps({"path": f"f{n}.py"})}}]},
            {"role": "tool", "tool_call_id": f"call_{seed}_{n}", "content": f"file {n} of {seed}: {filler}"}]
    return bodies


def timed_post(conn, path, body):
    start = time.perf_counter()
    conn.request("POST", path, body, {"content-type": "application/json"})
    response = conn.getresponse()
    response.read()
    assert response.status == 200, response.status
    return (time.perf_counter() - start) * 1000


def session_bench(binary, upstream, tmp):
    ledger = os.path.join(tmp, "session.jsonl")
    proc, port = start_proxy(binary, upstream, ledger, 60000)
    try:
        bodies = session_bodies(200)
        via = http.client.HTTPConnection("127.0.0.1", port)
        direct = http.client.HTTPConnection("127.0.0.1", upstream)
        through, straight = [], []
        for body in bodies:
            straight.append(timed_post(direct, "/v1/chat/completions", body))
            through.append(timed_post(via, "/v1/chat/completions", body))
        time.sleep(0.5)
        lines = [json.loads(l) for l in open(ledger)]
    finally:
        proc.kill()
    below, at = [], []
    previous = 0
    for line in lines:
        if (line["compactions"] or 0) > previous:
            at.append(line["proxy_ms"])
        elif line["action"] == "forwarded":
            below.append(line["proxy_ms"])
        previous = line["compactions"] or 0
    added = [t - s for t, s in zip(through, straight)]
    print(f"session: 200 calls, {previous} compactions, largest body {len(bodies[-1]) // 1024} KB, "
          f"{lines[-1]['tokens_received']} tokens received at the last call")
    print(f"  proxy_ms under the trigger ({len(below)} calls): median {statistics.median(below):.2f} ms, "
          f"p99 {percentile(below, 0.99):.2f} ms")
    print(f"  proxy_ms at a compaction ({len(at)} calls): median {statistics.median(at):.2f} ms, "
          f"p99 {percentile(at, 0.99):.2f} ms")
    after = [l["proxy_ms"] for l in lines if l["action"] == "compacted" and l not in at]
    if after:
        print(f"  proxy_ms of compacted calls between compactions ({len(after)}): median "
              f"{statistics.median(after):.2f} ms, p99 {percentile(after, 0.99):.2f} ms")
    print(f"  end to end, through the proxy less straight to upstream: median "
          f"{statistics.median(added):.2f} ms, p99 {percentile(added, 0.99):.2f} ms")


def throughput(port, path, body, threads, seconds):
    stop = time.perf_counter() + seconds
    counts = [0] * threads

    def work(i):
        conn = http.client.HTTPConnection("127.0.0.1", port)
        while time.perf_counter() < stop:
            conn.request("POST", path, body, {"content-type": "application/json"})
            response = conn.getresponse()
            response.read()
            assert response.status == 200
            counts[i] += 1

    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    start = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return sum(counts) / (time.perf_counter() - start)


def throughput_bench(binary, upstream, tmp, threads, seconds):
    proc, port = start_proxy(binary, upstream, os.path.join(tmp, "load.jsonl"), 1_000_000)
    try:
        text = "x" * (100 * 1024 - 100)
        body = json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": text}]}).encode()
        direct = throughput(upstream, "/v1/files", body, threads, seconds)
        passed = throughput(port, "/v1/files", body, threads, seconds)
        read = throughput(port, "/v1/chat/completions", body, threads, seconds)
    finally:
        proc.kill()
    print(f"100 KB bodies, {threads} client threads, {seconds} s each:")
    print(f"  straight to upstream: {direct:.0f} req/s")
    print(f"  through the proxy, a path it does not read: {passed:.0f} req/s")
    print(f"  through the proxy, /v1/chat/completions under the trigger: {read:.0f} req/s")


def memory_bench(binary, upstream, tmp):
    proc, port = start_proxy(binary, upstream, os.path.join(tmp, "memory.jsonl"), 1_000_000)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port)
        timed_post(conn, "/v1/chat/completions", session_bodies(1)[0])
        before = rss_kib(proc.pid)
        sent = 0
        for seed in range(1000):
            body = session_bodies(20, seed=seed + 1)[-1]
            sent += len(body)
            timed_post(conn, "/v1/chat/completions", body)
        conn.request("GET", "/ctxcompact/stats")
        stats = json.loads(conn.getresponse().read())
        after = rss_kib(proc.pid)
    finally:
        proc.kill()
    print(f"memory: {stats['cached_conversations']} conversations cached ({sent // 1_000_000} MB of bodies, "
          f"{sent // 1000 // 1000} KB each): RSS {before // 1024} MB before, {after // 1024} MB after, "
          f"{(after - before) / 1000:.0f} KiB per conversation")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=10)
    args = parser.parse_args()
    upstream = start_upstream()
    with tempfile.TemporaryDirectory() as tmp:
        session_bench(args.binary, upstream, tmp)
        throughput_bench(args.binary, upstream, tmp, args.threads, args.seconds)
        memory_bench(args.binary, upstream, tmp)


if __name__ == "__main__":
    sys.exit(main())

// Session (an agent loop's conversation) and compactRequest (the proxy's decision for one body).

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import * as ctxcompact from "../index.js";

/** The messages of tool round `i`, with a result of about `size` words. */
function round(i, size) {
  return [
    {
      role: "assistant",
      content: null,
      tool_calls: [{ id: `call_${i}`, type: "function", function: { name: "read_file", arguments: JSON.stringify({ path: `src/f${i}.rs` }) } }],
    },
    { role: "tool", tool_call_id: `call_${i}`, content: Array.from({ length: size }, (_, k) => `line${i}_${k}`).join(" ") },
  ];
}

const START = [
  { role: "system", content: "You are a coding agent." },
  { role: "user", content: "Read every file under src/ and summarise them." },
];

describe("Session", () => {
  it("compacts past the trigger only, and only appends in between", () => {
    const session = new ctxcompact.Session(START, { window: 20_000 });
    assert.equal(session.trigger, 14_000);
    const reports = [];
    let before = session.body;
    for (let i = 0; i < 60; i += 1) {
      session.push(round(i, 400));
      const report = session.compactIfNeeded();
      const body = session.body;
      if (report) {
        reports.push(report);
        assert.equal(report.action, "compacted");
        assert.ok(report.tokens_before > session.trigger);
        assert.ok(session.tokens <= 10_000, `${session.tokens} tokens after a compaction`);
      } else {
        // Between compactions the conversation only grows at its end.
        assert.deepStrictEqual(body.slice(0, before.length), before);
      }
      assert.ok(session.tokens <= session.trigger);
      before = body;
    }
    // Results of about 7% of the window: 8 recent calls do not fit under the target, so each
    // compaction goes to the target and the room above it holds about three calls (gists of the
    // cleared outputs fill the target where bare placeholders overshot it).
    assert.ok(reports.length >= 2 && reports.length <= 20, `${reports.length} compactions`);
    assert.equal(session.compactions, reports.length);
    assert.equal(session.length, session.body.length);
    assert.deepStrictEqual(session.body.slice(0, 2), START);
  });

  it("keeps a round waiting for its results whole", () => {
    const session = new ctxcompact.Session(START, { target: 200 });
    session.push(round(0, 400)[0]);
    assert.equal(session.compactIfNeeded(), null);
  });

  it("refuses messages that are not a conversation", () => {
    const session = new ctxcompact.Session([], { window: 1000 });
    assert.throws(() => session.push({ role: "wizard", content: "hi" }), { code: ctxcompact.codes.input });
    assert.throws(() => new ctxcompact.Session([], {}), { code: ctxcompact.codes.options });
  });
});

describe("compactRequest", () => {
  const body = (rounds) => JSON.stringify({
    model: "gpt-4o",
    messages: [...START, ...Array.from({ length: rounds }, (_, i) => round(i, 400)).flat(), { role: "user", content: "Go on." }],
  });

  it("forwards the received bytes under the trigger", () => {
    const received = Buffer.from(body(3));
    const forward = ctxcompact.compactRequest(received, "openai", { window: 100_000 });
    assert.equal(forward.action, "forwarded");
    assert.ok(forward.body.equals(received));
    assert.equal(forward.tokensForwarded, forward.tokensReceived);
  });

  it("compacts past the trigger, the same bytes every time", () => {
    const received = body(60);
    const first = ctxcompact.compactRequest(received, "openai", { window: 20_000 });
    const second = ctxcompact.compactRequest(Buffer.from(received), "openai", { window: 20_000 });
    assert.equal(first.action, "compacted");
    assert.ok(first.tokensForwarded < first.tokensReceived);
    assert.ok(first.tokensForwarded <= 14_000);
    assert.ok(first.body.equals(second.body));
    assert.deepStrictEqual(ctxcompact.validate(first.body.toString("utf8")), []);
    assert.equal(first.facts.window, 20_000);
    // The proxy ledger's record, flattened as its line is, with the names of before.
    assert.equal(first.window, 20_000);
    assert.equal(first.windowSource, "flag");
    assert.equal(first.compactionsRun, first.compactions);
    assert.equal(typeof first.budget, "number");
    assert.equal(first.failOpen, undefined);
    assert.equal(first.unknownModel, null);
  });

  it("fails open on what it cannot read", () => {
    const forward = ctxcompact.compactRequest("{not json", "openai", { window: 1000 });
    assert.equal(forward.action, "failed_open");
    assert.equal(forward.body.toString(), "{not json");
    assert.equal(typeof forward.reason, "string");
    assert.equal(forward.failOpen, "not_json");
    assert.equal(forward.archiveError, null);
    assert.deepStrictEqual(forward.instructionFiles, []);
  });
});

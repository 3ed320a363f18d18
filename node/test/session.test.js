// Session (an agent loop's conversation), compactRequest (the proxy's decision for one body),
// RequestCompactor (the same decision kept across calls) and recallRequest.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { createRequire } from "node:module";

import * as ctxcompact from "../index.js";

const native = createRequire(import.meta.url)("../ctxcompact.node");

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

describe("RequestCompactor", () => {
  const history = [...START, ...Array.from({ length: 40 }, (_, i) => round(i, 400)).flat()];
  const body = (end) => JSON.stringify({ model: "gpt-4o", messages: history.slice(0, end) });

  it("resumes each call of a history from its cache, with the bytes of a one-off call", () => {
    // See: #56 (Node keeps a request compactor as Python's adapters do).
    const kept = new ctxcompact.RequestCompactor("openai", { window: 20_000, handles: true });
    let keptRuns = 0;
    let aloneRuns = 0;
    let alone;
    const keptCompactions = [];
    for (let end = 4; end <= history.length; end += 2) {
      let before = native.pipelineRuns();
      const forward = kept.compact(body(end));
      keptRuns += native.pipelineRuns() - before;
      before = native.pipelineRuns();
      alone = ctxcompact.compactRequest(body(end), "openai", { window: 20_000, handles: true });
      aloneRuns += native.pipelineRuns() - before;
      assert.ok(forward.body.equals(alone.body), `call of ${end} messages`);
      const { body: _kept, compactionsRun: keptRun, ...keptRecord } = forward;
      const { body: _alone, compactionsRun: aloneRun, ...aloneRecord } = alone;
      assert.deepStrictEqual(keptRecord, aloneRecord, `call of ${end} messages`);
      assert.equal(aloneRun, alone.compactions);
      keptCompactions.push(keptRun);
    }
    // Each compaction of the history ran once through the kept compactor: only the ones its
    // call added; compactRequest alone replays them all on every call.
    const ran = keptCompactions.reduce((a, b) => a + b, 0);
    assert.ok(alone.compactions >= 2, `${alone.compactions} compactions`);
    assert.equal(ran, alone.compactions);
    assert.equal(keptRuns, ran);
    assert.ok(aloneRuns > 2 * keptRuns, `${aloneRuns} runs alone, ${keptRuns} kept`);
  });

  it("refuses the options compactRequest refuses, with the same errors", () => {
    const bad = [
      ["cohere", {}],
      ["openai", { window: -1 }],
      ["openai", { window: 0 }],
      ["openai", { trigger: "high" }],
      ["openai", { trigger: 0.5, targetRatio: 0.9 }],
      ["openai", { client: "cursor" }],
      ["openai", { pathModel: 7 }],
      ["openai", { model: "gpt-4o" }],
      ["openai", { toolMode: "shred" }],
      ["openai", { catalog: "/no/such/catalog.json" }],
      ["openai", { archiveDir: 7 }],
    ];
    for (const [format, options] of bad) {
      let expected;
      assert.throws(() => ctxcompact.compactRequest("{}", format, options), (err) => {
        expected = err;
        return err instanceof ctxcompact.CtxcompactError;
      });
      assert.equal(expected.code, ctxcompact.codes.options, expected.message);
      assert.throws(() => new ctxcompact.RequestCompactor(format, options), (err) => {
        assert.equal(err.code, expected.code);
        assert.equal(err.message, expected.message);
        return true;
      }, JSON.stringify(options));
    }
    assert.throws(() => new ctxcompact.RequestCompactor("openai", {}, -1), { code: ctxcompact.codes.options });
    const kept = new ctxcompact.RequestCompactor("openai", { window: 1000 });
    assert.throws(() => kept.compact({}), { code: ctxcompact.codes.options, message: /body must be a Buffer or a string/ });
  });
});

describe("recallRequest", () => {
  const history = [...START, ...Array.from({ length: 40 }, (_, i) => round(i, 400)).flat()];
  const body = JSON.stringify({ model: "gpt-4o", messages: history });
  const options = { window: 20_000, handles: true };

  it("gives back what a handle of the compacted body names, exactly", () => {
    const sent = ctxcompact.compactRequest(body, "openai", options).body.toString("utf8");
    const handles = [...new Set(sent.match(/[0-9a-f]{12}\/[0-9a-f]{12}/g))];
    assert.ok(handles.length > 0, "the compacted body names no handle");
    const given = new Set(history.map((m) => JSON.stringify(m)));
    let original = 0;
    for (const handle of handles) {
      const recalled = ctxcompact.recallRequest(body, "openai", handle, options);
      const kept = new ctxcompact.RequestCompactor("openai", options).recall(Buffer.from(body), handle);
      assert.equal(kept, recalled);
      const lines = recalled.split("\n").filter((line) => line !== "").map((line) => JSON.stringify(JSON.parse(line)));
      assert.ok(lines.length > 0, handle);
      // Each message given back is the history's, as it held it, or one an earlier compaction
      // sent (a later compaction's span holds its notes).
      for (const line of lines) assert.ok(given.has(line) || line.includes("[ctxcompact:"), `${handle}: ${line.slice(0, 200)}`);
      original += lines.filter((line) => given.has(line)).length;
    }
    assert.ok(original > 0, "no message of the history was given back");
  });

  it("fails with a recall error naming a handle it cannot give back", () => {
    const short = JSON.stringify({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] });
    for (const [handle, named] of [["zz", /`zz` is not a ctxcompact handle/], ["000000000000/000000000000", /000000000000\/000000000000/]]) {
      assert.throws(() => ctxcompact.recallRequest(short, "openai", handle, options), (err) => {
        assert.ok(err instanceof ctxcompact.CtxcompactError);
        assert.equal(err.code, ctxcompact.codes.recall);
        assert.equal(err.exitCode, 2);
        assert.match(err.message, named);
        return true;
      });
    }
    assert.throws(() => ctxcompact.recallRequest(short, "openai", 7, options), { code: ctxcompact.codes.options, message: /handle must be a string/ });
    assert.throws(() => ctxcompact.recallRequest(short, "cohere", "zz", options), { code: ctxcompact.codes.options });
  });
});

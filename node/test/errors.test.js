// Each kind of failure has its code (and the command line's exit code), the report is attached
// where there is one, and nothing is written on error.

import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";

import * as ctxcompact from "../index.js";

const scratch = mkdtempSync(join(tmpdir(), "ctxcompact-node-errors-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

const { codes, CtxcompactError } = ctxcompact;

/** A task, `rounds` tool rounds of `size` words each, and a last request. */
function session(rounds, size) {
  const messages = [
    { role: "system", content: "You are a coding agent." },
    { role: "user", content: "Fix the failing test in src/lib.rs." },
  ];
  for (let i = 0; i < rounds; i += 1) {
    messages.push({
      role: "assistant",
      content: null,
      tool_calls: [{ id: `call_${i}`, type: "function", function: { name: "bash", arguments: JSON.stringify({ cmd: `cat src/f${i}.rs` }) } }],
    });
    messages.push({ role: "tool", tool_call_id: `call_${i}`, content: Array.from({ length: size }, (_, k) => `word${i}_${k}`).join(" ") });
  }
  messages.push({ role: "user", content: "Now run the tests." });
  return messages;
}

function throwsWith(fn, code, check = () => {}) {
  assert.throws(fn, (err) => {
    assert.ok(err instanceof CtxcompactError);
    assert.ok(err instanceof Error);
    assert.equal(err.code, code, err.message);
    check(err);
    return true;
  });
}

describe("errors", () => {
  it("an orphan tool result is bad input, naming the message and the field", () => {
    const messages = session(2, 10);
    messages.splice(2, 1);
    throwsWith(() => ctxcompact.compact(messages, { ratio: 0.5 }), codes.input, (err) => {
      assert.equal(err.exitCode, 2);
      assert.equal(err.messageIndex, 2);
      assert.equal(typeof err.field, "string");
    });
  });

  it("what is not a conversation is bad input", () => {
    throwsWith(() => ctxcompact.compact("not json", { ratio: 0.5 }), codes.input);
    throwsWith(() => ctxcompact.compact(42, { ratio: 0.5 }), codes.input);
    throwsWith(() => ctxcompact.count({ nothing: true }), codes.input);
    const cyclic = [];
    cyclic.push(cyclic);
    throwsWith(() => ctxcompact.compact(cyclic, { ratio: 0.5 }), codes.input);
  });

  it("a budget the pinned messages exceed cannot fit, with the report, writing no archive", () => {
    const archiveDir = join(scratch, "archive-cannot-fit");
    throwsWith(() => ctxcompact.compact(session(3, 400), { target: 50, archiveDir }), codes.cannotFit, (err) => {
      assert.equal(err.exitCode, 3);
      assert.equal(err.report.action, "cannot_fit");
      assert.ok(err.report.pinned_tokens > 50);
    });
    assert.equal(existsSync(archiveDir), false);
  });

  // See: #56 (the report comes with the failure, not from a second run).
  it("a call that cannot fit runs the pipeline once", () => {
    const native = createRequire(import.meta.url)("../ctxcompact.node");
    let before = native.pipelineRuns();
    throwsWith(() => ctxcompact.compact(session(3, 400), { target: 10 }), codes.cannotFit, (err) => {
      assert.equal(err.report.action, "cannot_fit");
    });
    assert.equal(native.pipelineRuns() - before, 1);
    before = native.pipelineRuns();
    assert.equal(ctxcompact.analyze(session(3, 400), { target: 10 }).action, "cannot_fit");
    assert.equal(native.pipelineRuns() - before, 1);
  });

  it("unusable options are option errors", () => {
    const messages = session(2, 10);
    throwsWith(() => ctxcompact.compact(messages, {}), codes.options);
    throwsWith(() => ctxcompact.compact(messages, { target: 100, ratio: 0.5 }), codes.options);
    throwsWith(() => ctxcompact.compact(messages, { model: "no-such-model-xyz" }), codes.options);
    throwsWith(() => ctxcompact.compact(messages, { target: -1 }), codes.options);
    throwsWith(() => ctxcompact.compact(messages, { ratio: "half" }), codes.options);
    throwsWith(() => ctxcompact.compact(messages, { toolMode: "shred", ratio: 0.5 }), codes.options);
    throwsWith(() => ctxcompact.compact(messages, { keep_tool_rounds: 2, ratio: 0.5 }), codes.options);
    throwsWith(() => ctxcompact.count(messages, { tokenizer: "gpt2" }), codes.options);
    throwsWith(() => ctxcompact.compactRequest(Buffer.from("{}"), "cohere"), codes.options);
    throwsWith(() => ctxcompact.compactRequest({}, "openai"), codes.options);
  });

  it("the archive is written only with a good output, and named by the markers", () => {
    const archiveDir = join(scratch, "archive");
    const { body, report } = ctxcompact.compact(session(8, 300), { target: 1500, archiveDir });
    assert.equal(report.action, "compacted");
    const files = readdirSync(archiveDir);
    assert.ok(files.length > 0);
    assert.ok(JSON.stringify(body).includes(files[0]));
  });
});

describe("validate", () => {
  it("lists every pairing problem, as the command line", () => {
    const messages = session(2, 10);
    messages.splice(2, 1);
    const problems = ctxcompact.validate(messages);
    assert.ok(problems.length > 0);
    assert.deepStrictEqual(Object.keys(problems[0]), ["messageIndex", "field", "kind", "callId", "text"]);
    assert.equal(problems[0].kind, "orphan");
    assert.deepStrictEqual(ctxcompact.validate(session(2, 10)), []);
  });
});

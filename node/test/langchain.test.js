// The LangChain.js middleware: a createAgent loop of 40 tool calls against a fake model, with
// tool results large enough to pass a small window; the agent's state keeps every message.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { count } from "../index.js";

let langchain;
let core;
let testing;
let adapter;
try {
  langchain = await import("langchain");
  core = await import("@langchain/core/messages");
  testing = await import("@langchain/core/testing");
  adapter = await import("../langchain.js");
} catch {
  // LangChain is a development dependency: `npm ci` in node/ installs it.
}
const skip = langchain ? false : "the `langchain` package is not installed (npm ci in node/)";

/** About 2 × `tokens` tokens of source-like text, different for each `seed`. */
function fileText(seed, tokens) {
  const lines = [];
  for (let i = 0; lines.length * 12 < tokens; i += 1) {
    lines.push(`fn step_${seed}_${i}(value: u64) -> u64 { value.wrapping_mul(${(seed * 7919 + i * 104729) % 1000003}) }`);
  }
  return lines.join("\n");
}

/** The OpenAI Chat messages a model call received, to count them. */
function openai(messages) {
  return messages.map((m) => {
    const type = m.getType();
    if (type === "ai") {
      const out = { role: "assistant", content: typeof m.content === "string" ? m.content : "" };
      if (m.tool_calls?.length) {
        out.tool_calls = m.tool_calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: JSON.stringify(c.args) } }));
      }
      return out;
    }
    if (type === "tool") return { role: "tool", tool_call_id: m.tool_call_id, content: m.content };
    return { role: type === "system" ? "system" : "user", content: m.content };
  });
}

describe("the createAgent middleware", { skip }, () => {
  it("keeps 40 tool calls within a 16k window, pairs every call, compacts a few times", async () => {
    const WINDOW = 16_000;
    const STEPS = 40;
    const model = testing.fakeModel();
    for (let n = 1; n <= STEPS; n += 1) {
      model.respond(
        () => new core.AIMessage({
          content: `Reading file ${n}.`,
          tool_calls: [{ id: `call_${n}`, name: "read_file", args: { path: `src/f${n}.rs` }, type: "tool_call" }],
        }),
      );
    }
    model.respond(new core.AIMessage("All 40 files read."));
    const readFile = langchain.tool(async ({ path }) => fileText(Number(path.replace(/\D/g, "")), 500), {
      name: "read_file",
      description: "Reads a file",
      schema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
    });
    const compactions = [];
    const agent = langchain.createAgent({
      model,
      tools: [readFile],
      systemPrompt: "You read files one by one and report when all are read.",
      middleware: [adapter.ctxcompactMiddleware({ window: WINDOW, onCompaction: (report) => compactions.push(report) })],
    });
    const state = await agent.invoke(
      { messages: [new core.HumanMessage("Read src/f1.rs to src/f40.rs, one at a time.")] },
      { recursionLimit: 200 },
    );

    assert.equal(state.messages.at(-1).content, "All 40 files read.");
    // The state keeps the whole history: the request, 40 calls, 40 results, the answer.
    assert.equal(state.messages.length, 1 + 2 * STEPS + 1);
    assert.ok(state.messages.every((m) => !String(m.content).startsWith("[ctxcompact")));
    assert.equal(model.calls.length, STEPS + 1);
    const sizes = model.calls.map(({ messages }) => count(openai(messages)).total);
    for (const [i, size] of sizes.entries()) {
      assert.ok(size <= WINDOW, `call ${i}: ${size} tokens, over the ${WINDOW}-token window`);
    }
    for (const [i, { messages }] of model.calls.entries()) {
      const calls = messages.flatMap((m) => (m.getType() === "ai" ? (m.tool_calls ?? []).map((c) => c.id) : []));
      const results = messages.filter((m) => m.getType() === "tool").map((m) => m.tool_call_id);
      assert.deepStrictEqual(results, calls, `call ${i}: every call with its result`);
    }
    // Past the trigger only, a few times, never twice in a row: between compactions a call
    // sends what the last one sent and what the state gained since.
    assert.ok(compactions.length >= 2, `${compactions.length} compactions`);
    for (const report of compactions) {
      assert.ok(report.tokens_before > WINDOW * 0.7, `compacted at ${report.tokens_before} tokens`);
      assert.ok(report.tokens_after <= WINDOW * 0.5);
    }
    assert.ok(compactions.length <= STEPS / 4, `${compactions.length} compactions in ${STEPS} calls`);
    // A call that does not send what the one before it sent, and more, follows a compaction.
    const rewrites = model.calls.filter(({ messages }, i) => {
      const before = i > 0 ? model.calls[i - 1].messages : [];
      return !before.every((m, k) => JSON.stringify(m) === JSON.stringify(messages[k]));
    }).length;
    assert.equal(rewrites, compactions.length);
    const compactedCalls = model.calls.filter(({ messages }) => messages.length < state.messages.length - 1).length;
    console.log(
      `langchain loop: ${model.calls.length} model calls, ${compactions.length} compactions over ${compactedCalls} calls sent compacted, largest call ${Math.max(...sizes)} of ${WINDOW} tokens`,
    );
  });
});

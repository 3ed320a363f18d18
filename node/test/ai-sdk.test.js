// The AI SDK adapter: ModelMessages through the compactor and back losslessly, and real
// generateText and streamText loops of 40 tool steps against the SDK's MockLanguageModelV4,
// with tool results large enough to pass a small window.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { compact, count, trimTools, validate } from "../index.js";

let ai;
let aiTest;
let adapter;
try {
  ai = await import("ai");
  aiTest = await import("ai/test");
  adapter = await import("../ai-sdk.js");
} catch {
  // The SDK is a development dependency: `npm ci` in node/ installs it.
}
const skip = ai ? false : "the `ai` package is not installed (npm ci in node/)";

/** A conversation with every kind of part ModelMessages have. */
function everyPart() {
  return [
    { role: "system", content: "You are a careful agent.", providerOptions: { openai: { x: 1 } } },
    {
      role: "user",
      content: [
        { type: "text", text: "Fix the build." },
        { type: "file", data: "aGVsbG8=", mediaType: "text/plain", filename: "notes.txt" },
        { type: "image", image: "https://example.test/a.png" },
      ],
    },
    {
      role: "assistant",
      content: [
        { type: "reasoning", text: "Look at the log first.", providerOptions: { anthropic: { signature: "sig" } } },
        { type: "text", text: "Reading the log." },
        { type: "tool-call", toolCallId: "c1", toolName: "read", input: { path: "build.log" } },
        { type: "tool-call", toolCallId: "c2", toolName: "run", input: { cmd: "cargo build" } },
        { type: "tool-call", toolCallId: "c3", toolName: "rm", input: { path: "/" } },
        { type: "tool-approval-request", approvalId: "a1", toolCallId: "c3" },
        { type: "tool-call", toolCallId: "s1", toolName: "web_search", input: {}, providerExecuted: true },
        { type: "tool-result", toolCallId: "s1", toolName: "web_search", output: { type: "json", value: { hits: 2 } } },
      ],
    },
    {
      role: "tool",
      content: [{ type: "tool-approval-response", approvalId: "a1", approved: false, reason: "no" }],
    },
    {
      role: "tool",
      content: [
        { type: "tool-result", toolCallId: "c1", toolName: "read", output: { type: "text", value: "error[E0425] ".repeat(400) } },
        { type: "tool-result", toolCallId: "c2", toolName: "run", output: { type: "json", value: { code: 101, log: "warning ".repeat(400) } } },
        { type: "tool-result", toolCallId: "c3", toolName: "rm", output: { type: "execution-denied", reason: "no" } },
      ],
    },
    {
      role: "assistant",
      content: [{ type: "tool-call", toolCallId: "c4", toolName: "view", input: {} }],
    },
    {
      role: "tool",
      content: [
        {
          type: "tool-result",
          toolCallId: "c4",
          toolName: "view",
          output: { type: "content", value: [{ type: "text", text: "screen" }, { type: "file-data", data: "AA==", mediaType: "image/png" }] },
        },
      ],
    },
    {
      role: "assistant",
      content: [{ type: "tool-call", toolCallId: "c5", toolName: "run", input: { cmd: "false" } }],
    },
    {
      role: "tool",
      content: [
        { type: "tool-result", toolCallId: "c5", toolName: "run", output: { type: "error-text", value: "exit 1" } },
      ],
    },
    { role: "assistant", content: "Fixed: a missing import." },
    { role: "user", content: "Thanks." },
  ];
}

describe("ModelMessages through the library's ai-sdk format", () => {
  it("are detected, valid, and written back as they were read", () => {
    const messages = everyPart();
    const text = JSON.stringify(messages);
    assert.equal(count(messages).total, count(messages, { format: "ai-sdk" }).total);
    assert.deepStrictEqual(validate(messages), []);
    const { body, report } = compact(text, { ratio: 1 });
    assert.equal(report.format, "ai-sdk");
    assert.deepStrictEqual(JSON.parse(body), messages);
    // Tool trimming rewrites the results it clears as text outputs and writes the rest as read.
    const trimmed = JSON.parse(trimTools(text, { keepToolRounds: 1 }).body);
    assert.equal(trimmed.length, messages.length);
    assert.deepStrictEqual(trimmed[4].content.map((p) => p.output.type), ["text", "text", "execution-denied"]);
    assert.deepStrictEqual(trimmed[2], messages[2]);
    assert.deepStrictEqual(trimmed.slice(7), messages.slice(7));
  });

  it("come back as the very objects that went in, but the results cleared", { skip }, () => {
    const messages = everyPart();
    const copy = structuredClone(messages);
    const { messages: out, report } = adapter.compactModelMessages(messages, { target: 900, keepToolRounds: 1 });
    assert.equal(report.action, "compacted");
    assert.deepStrictEqual(messages, copy, "the input is left alone");
    const results = out.find((m) => m.role === "tool" && m.content.some((p) => p.toolCallId === "c1"));
    assert.notEqual(results, messages[4]);
    assert.deepStrictEqual(results.content.map((p) => [p.toolName, p.output.type]), [
      ["read", "text"],
      ["run", "text"],
      ["rm", "execution-denied"],
    ]);
    assert.ok(results.content[0].output.value.length < messages[4].content[0].output.value.length);
    for (const message of out) {
      if (message !== results && messages.includes(message) === false) {
        assert.ok(message.role === "user" && typeof message.content === "string", JSON.stringify(message));
      }
    }
    assert.ok(out.includes(messages[2]) && out.includes(messages[10]));
  });
});

/** About `tokens` tokens of source-like text, different for each `seed`. */
function fileText(seed, tokens) {
  const lines = [];
  for (let i = 0; lines.length * 12 < tokens; i += 1) {
    lines.push(`fn step_${seed}_${i}(value: u64) -> u64 { value.wrapping_mul(${(seed * 7919 + i * 104729) % 1000003}) }`);
  }
  return lines.join("\n");
}

/** The content of step `step` of the scripted model: a tool call, then the final answer. */
function scripted(step, steps) {
  if (step > steps) return [{ type: "text", text: "All 40 files read." }];
  return [
    { type: "text", text: `Reading file ${step}.` },
    { type: "tool-call", toolCallId: `call_${step}`, toolName: "read_file", input: JSON.stringify({ path: `src/f${step}.rs` }) },
  ];
}

const USAGE = {
  inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 10, text: 10, reasoning: 0 },
};

/** A MockLanguageModelV4 that records each prompt and answers by `scripted`, or streams it. */
function mockModel(prompts, steps, streaming) {
  const finish = (content) => (content.some((p) => p.type === "tool-call")
    ? { unified: "tool-calls", raw: "tool_calls" }
    : { unified: "stop", raw: "stop" });
  if (!streaming) {
    return new aiTest.MockLanguageModelV4({
      doGenerate: async ({ prompt }) => {
        prompts.push(prompt);
        const content = scripted(prompts.length, steps);
        return { content, finishReason: finish(content), usage: USAGE, warnings: [] };
      },
    });
  }
  return new aiTest.MockLanguageModelV4({
    doStream: async ({ prompt }) => {
      prompts.push(prompt);
      const content = scripted(prompts.length, steps);
      const chunks = [{ type: "stream-start", warnings: [] }];
      for (const [i, part] of content.entries()) {
        if (part.type === "text") {
          chunks.push({ type: "text-start", id: `t${i}` }, { type: "text-delta", id: `t${i}`, delta: part.text }, { type: "text-end", id: `t${i}` });
        } else {
          chunks.push(part);
        }
      }
      chunks.push({ type: "finish", finishReason: finish(content), usage: USAGE });
      return { stream: aiTest.convertArrayToReadableStream(chunks) };
    },
  });
}

for (const streaming of [false, true]) {
  const name = streaming ? "streamText" : "generateText";
  describe(`a ${name} loop with prepareStep`, { skip }, () => {
    it("keeps 40 tool steps within a 16k window, pairs every call, compacts a few times", async () => {
      const WINDOW = 16_000;
      const STEPS = 40;
      const prompts = [];
      const compactions = [];
      const settings = {
        model: mockModel(prompts, STEPS, streaming),
        instructions: "You read files one by one and report when all are read.",
        messages: [{ role: "user", content: "Read src/f1.rs to src/f40.rs, one at a time." }],
        tools: {
          read_file: ai.tool({
            description: "Reads a file",
            inputSchema: ai.jsonSchema({ type: "object", properties: { path: { type: "string" } }, required: ["path"] }),
            execute: async ({ path }) => fileText(Number(path.replace(/\D/g, "")), 500),
          }),
        },
        stopWhen: ai.stepCountIs(STEPS + 5),
        prepareStep: adapter.prepareStep({
          window: WINDOW,
          overhead: 200,
          onCompaction: (report, stepNumber) => compactions.push({ report, stepNumber }),
        }),
      };
      let text;
      if (streaming) {
        const result = ai.streamText(settings);
        await result.consumeStream();
        text = await result.text;
      } else {
        text = (await ai.generateText(settings)).text;
      }

      assert.equal(text, "All 40 files read.");
      assert.equal(prompts.length, STEPS + 1);
      const sizes = prompts.map((prompt) => count(prompt, { format: "ai-sdk" }).total);
      for (const [i, size] of sizes.entries()) {
        assert.ok(size + 200 <= WINDOW, `prompt ${i}: ${size} tokens and 200 of tools, over the ${WINDOW}-token window`);
      }
      for (const [i, prompt] of prompts.entries()) {
        const calls = prompt.flatMap((m) => (m.role === "assistant" ? m.content.filter((p) => p.type === "tool-call") : []));
        const results = prompt.flatMap((m) => (m.role === "tool" ? m.content.filter((p) => p.type === "tool-result") : []));
        assert.deepStrictEqual(
          results.map((r) => r.toolCallId),
          calls.map((c) => c.toolCallId),
          `prompt ${i}: every call with its result`,
        );
      }
      // Past the trigger only, a few times, never twice in a row (stable on its own output).
      assert.ok(compactions.length >= 2, `${compactions.length} compactions`);
      assert.ok(compactions.length <= STEPS / 4, `${compactions.length} compactions in ${STEPS} steps`);
      for (const { report } of compactions) {
        assert.ok(report.tokens_before > WINDOW * 0.7, `compacted at ${report.tokens_before} tokens`);
        assert.ok(report.tokens_after <= WINDOW * 0.5);
      }
      // A prompt that does not hold the one before it, and more, follows a compaction.
      const rewrites = prompts.filter((prompt, i) => {
        const before = i > 0 ? prompts[i - 1] : [];
        return !before.every((m, k) => JSON.stringify(m) === JSON.stringify(prompt[k]));
      }).length;
      assert.equal(rewrites, compactions.length);
      for (let i = 1; i < compactions.length; i += 1) {
        assert.ok(compactions[i].stepNumber > compactions[i - 1].stepNumber + 1);
      }
      console.log(
        `ai-sdk ${name} loop: ${prompts.length} model calls, ${compactions.length} compactions (steps ${compactions.map((c) => c.stepNumber).join(", ")}), largest prompt ${Math.max(...sizes) + 200} of ${WINDOW} tokens`,
      );
    });
  });
}

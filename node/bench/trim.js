// In-process compact() against LangChain.js's trimMessages, on the same messages.
//
// Both sides get the same synthetic agent conversations (generated deterministically below),
// the same budget (half the conversation's tokens) and exact o200k counts: trimMessages gets a
// token counter that counts each message with js-tiktoken's o200k by the OpenAI recipe
// ctxcompact follows (checked against `count()` before timing). trimMessages counts the list
// less one message, then less two, and so on until it fits, so a plain counter tokenizes each
// message about n/2 times: 1,000 messages take minutes. By default the counter therefore
// remembers each message's count (the first run of a size counts every message once, as
// ctxcompact does on every call, and later runs only add); `--uncached` gives it none. Runs
// are interleaved (ours, theirs, ours, …) so that both see the same machine load; medians are
// reported, and trimMessages' first (counting) run beside them.
//
// What each timed call does:
// - compact(messages, { target }) on the list of message objects: JSON text to Rust, read,
//   pairing checked, every message counted once, old tool outputs trimmed, removal planned and
//   applied with a marker, the result checked, rendered and parsed back, with its report.
// - compactLangChainMessages(messages, { target }): the same from LangChain messages (what the
//   createAgent middleware runs), converted to OpenAI messages and back.
// - trimMessages(messages, { maxTokens, tokenCounter, strategy: "last", includeSystem: true })
//   on the same conversation as LangChain messages (built before timing).
//
//     node bench/trim.js [--sizes 1000,10000] [--runs 3] [--uncached]

import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";

import { AIMessage, HumanMessage, SystemMessage, ToolMessage, trimMessages } from "@langchain/core/messages";
import { getEncoding } from "js-tiktoken";

import { compact, count } from "../index.js";
import { compactLangChainMessages } from "../langchain.js";

const WORDS = (
  "parse config token budget message render unit round tool call result error value index "
  + "field format count strategy middle oldest marker report window model cache prefix test "
  + "assert build check path file line column json serde string vector option result iterator "
  + "thread lock buffer reader writer stream bytes encode decode trim keep drop clear summary"
).split(" ");
const TOOLS = ["read_file", "bash", "grep", "edit_file", "list_dir"];

/** A generator of numbers in [0, 1), the same for one seed (mulberry32). */
function random(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A coding agent's session of exactly `size` OpenAI messages: a system prompt and a task, tool
 * rounds (one call, sometimes two, each answered by 3 to 60 lines), a summary and a follow-up
 * every dozen rounds, and a last request.
 */
function agentConversation(size, seed = 12) {
  const next = random(seed);
  const int = (low, high) => low + Math.floor(next() * (high - low + 1));
  const word = () => WORDS[int(0, WORDS.length - 1)];
  const sentence = (n) => {
    const text = Array.from({ length: n }, word).join(" ");
    return `${text[0].toUpperCase()}${text.slice(1)}.`;
  };
  const output = (tool) => {
    const lines = int(3, 60);
    const line = {
      read_file: (i) => `    let ${word()}_${i} = ${word()}(${int(0, 999)});`,
      grep: () => `src/${word()}.rs:${int(1, 900)}: ${sentence(6)}`,
    }[tool] ?? (() => sentence(int(4, 12)));
    return Array.from({ length: lines }, (_, i) => line(i)).join("\n");
  };
  const messages = [
    { role: "system", content: `You are a coding agent. ${sentence(120)}` },
    { role: "user", content: `Fix the failing tests. ${sentence(30)}` },
  ];
  let call = 0;
  for (let rounds = 1; ; rounds += 1) {
    const calls = next() < 0.2 ? 2 : 1;
    if (messages.length + 1 + calls + 3 > size) break;
    const toolCalls = Array.from({ length: calls }, () => {
      const tool = TOOLS[int(0, TOOLS.length - 1)];
      const args = tool === "bash" || tool === "grep"
        ? { command: `${tool} -n ${word()} src` }
        : { path: `src/${word()}/${word()}.rs` };
      call += 1;
      return { id: `call_${String(call).padStart(6, "0")}`, type: "function", function: { name: tool, arguments: JSON.stringify(args) } };
    });
    messages.push({ role: "assistant", content: sentence(int(5, 20)), tool_calls: toolCalls });
    for (const tc of toolCalls) messages.push({ role: "tool", tool_call_id: tc.id, content: output(tc.function.name) });
    if (rounds % 12 === 0) {
      messages.push({ role: "assistant", content: sentence(int(20, 60)) });
      messages.push({ role: "user", content: sentence(int(8, 25)) });
    }
  }
  while (messages.length < size - 1) {
    messages.push({ role: messages.length % 2 ? "assistant" : "user", content: sentence(10) });
  }
  messages.push({ role: "user", content: `Now run the whole test suite. ${sentence(10)}` });
  return messages;
}

/** The same messages as LangChain messages. */
function langchainMessages(messages) {
  return messages.map((m) => {
    switch (m.role) {
      case "system":
        return new SystemMessage(m.content);
      case "user":
        return new HumanMessage(m.content);
      case "tool":
        return new ToolMessage({ content: m.content, tool_call_id: m.tool_call_id });
      default:
        return new AIMessage({
          content: m.content,
          tool_calls: (m.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, args: JSON.parse(c.function.arguments), type: "tool_call" })),
        });
    }
  });
}

const ROLES = { system: "system", human: "user", ai: "assistant", tool: "tool" };

/** A counter of one LangChain message by ctxcompact's recipe: 3 a message, its role, its
 * content; 3, the name and the arguments for each tool call; the call id of a result. */
function messageCounter(encoding) {
  const tokens = (text) => encoding.encode(text, [], []).length;
  return (message) => {
    let total = 3 + tokens(ROLES[message.getType()]) + tokens(typeof message.content === "string" ? message.content : "");
    for (const call of message.tool_calls ?? []) total += 3 + tokens(call.name) + tokens(JSON.stringify(call.args));
    if (message.getType() === "tool") total += tokens(message.tool_call_id);
    return total;
  };
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function main() {
  const { values } = parseArgs({ options: { sizes: { type: "string", default: "1000,10000" }, runs: { type: "string", default: "3" }, uncached: { type: "boolean", default: false } } });
  const sizes = values.sizes.split(",").map(Number);
  const runs = Number(values.runs);
  const one = messageCounter(getEncoding("o200k_base"));
  console.log(`trimMessages' counter: ${values.uncached ? "no cache" : "each message's count remembered"}`);
  console.log("| messages | tokens | budget | `compact()` | `compactLangChainMessages` | `trimMessages` (first run) | speed-up (first run) |");
  console.log("|---:|---:|---:|---:|---:|---:|---:|");
  for (const size of sizes) {
    const cache = new WeakMap();
    const cached = (m) => {
      if (!cache.has(m)) cache.set(m, one(m));
      return cache.get(m);
    };
    const counter = values.uncached ? one : cached;
    const tokenCounter = (messages) => messages.reduce((sum, m) => sum + counter(m), 0);
    const conversation = agentConversation(size);
    const lc = langchainMessages(conversation);
    const counts = count(conversation);
    const theirs = lc.map(one);
    if (theirs.some((n, i) => n !== counts.messages[i])) throw new Error("the two sides count differently");
    const budget = Math.floor(counts.total / 2);
    // One call each before timing: the o200k tables on both sides are built then.
    compact(conversation, { target: budget });
    one(lc[0]);
    const times = { ours: [], lc: [], trim: [] };
    let kept;
    for (let run = 0; run < runs; run += 1) {
      let start = performance.now();
      const result = compact(conversation, { target: budget });
      times.ours.push(performance.now() - start);
      if (result.report.tokens_after > budget) throw new Error("over the budget");
      start = performance.now();
      compactLangChainMessages(lc, { target: budget });
      times.lc.push(performance.now() - start);
      start = performance.now();
      kept = await trimMessages(lc, { maxTokens: budget, tokenCounter, strategy: "last", includeSystem: true });
      times.trim.push(performance.now() - start);
    }
    const [ours, viaLangChain, trim] = [median(times.ours), median(times.lc), median(times.trim)];
    const first = times.trim[0];
    console.log(
      `| ${size.toLocaleString("en")} | ${counts.total.toLocaleString("en")} | ${budget.toLocaleString("en")} | ${ours.toFixed(1)} ms | ${viaLangChain.toFixed(1)} ms | ${trim.toFixed(0)} ms (${first.toFixed(0)} ms), kept ${kept.length} | ${(trim / ours).toFixed(1)}× (${(first / ours).toFixed(1)}×) |`,
    );
  }
}

await main();

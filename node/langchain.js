// Compaction of what one model call of a LangChain.js agent sends: a middleware for
// `createAgent`, and `compactLangChainMessages` for a list of LangChain messages.
//
// The middleware's `wrapModelCall` passes the model handler the request with its messages
// compacted (past the trigger; unchanged under it) and leaves the agent's state whole: the
// full history stays in the graph's state, and each call sends what fits. Every message that
// comes out unchanged is the very object that went in (its id and metadata intact); only the
// messages ctxcompact rewrote (a cleared tool result, a cleared call's arguments, the marker
// that stands for removed history, a shortened task) are new.

import { AIMessage, HumanMessage, SystemMessage, ToolMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { createMiddleware } from "langchain";

import { compactMessages, RECALL_DESCRIPTION, RECALL_NAME, recallFrom, RecallStore } from "./index.js";

/** A LangChain message's type: `human`, `ai`, `system`, `tool`… */
function typeOf(message) {
  return typeof message.getType === "function" ? message.getType() : message._getType();
}

/** The text of a message's content: a string, or its blocks' text. */
function contentText(content) {
  if (typeof content === "string") return content;
  return (content ?? [])
    .map((block) => (typeof block === "string" ? block : (block.text ?? (block.type ? `[${block.type}]` : ""))))
    .filter((text) => text !== "")
    .join("\n");
}

/** The OpenAI Chat message a LangChain message counts and pairs as. */
function toOpenAI(message) {
  const content = contentText(message.content);
  switch (typeOf(message)) {
    case "system":
      return { role: "system", content };
    case "ai": {
      const calls = message.tool_calls ?? [];
      const m = { role: "assistant", content };
      if (calls.length > 0) {
        m.tool_calls = calls.map((call) => ({
          id: call.id,
          type: "function",
          function: { name: call.name, arguments: JSON.stringify(call.args ?? {}) },
        }));
      }
      return m;
    }
    case "tool":
      return { role: "tool", tool_call_id: message.tool_call_id, content };
    default:
      return { role: "user", content };
  }
}

/** The LangChain message for an output message ctxcompact wrote, from its original if any. */
function rebuilt(m, originals) {
  if (m.role === "tool") {
    const original = originals.tool.get(m.tool_call_id);
    return new ToolMessage({
      content: m.content,
      tool_call_id: m.tool_call_id,
      name: original?.name,
      id: original?.id,
      status: original?.status,
    });
  }
  if (m.role === "assistant") {
    const original = m.tool_calls?.length ? originals.ai.get(m.tool_calls[0].id) : undefined;
    const arguments_ = new Map((m.tool_calls ?? []).map((c) => [c.id, c.function.arguments]));
    return new AIMessage({
      content: original ? original.content : m.content,
      id: original?.id,
      tool_calls: (original?.tool_calls ?? []).map((call) => ({ ...call, args: parsed(arguments_.get(call.id), call.args) })),
    });
  }
  const text = contentText(m.content);
  return m.role === "system" ? new SystemMessage(text) : new HumanMessage(text);
}

function parsed(text, fallback) {
  if (text === undefined) return fallback;
  try {
    return JSON.parse(text);
  } catch {
    return { input: text };
  }
}

/**
 * Compacts LangChain messages as `compact()` does: `{ messages, report }`. `systemPrompt` (the
 * agent's, sent beside the messages) is counted, pinned and not returned.
 */
export function compactLangChainMessages(messages, options = {}) {
  const { systemPrompt, ...rest } = options;
  const head = systemPrompt ? [{ role: "system", content: systemPrompt }] : [];
  const openai = [...head, ...messages.map(toOpenAI)];
  const result = compactMessages(openai, rest);
  const { report, recallable } = result;
  if (report.action === "within_budget") {
    return { messages, report, recallable };
  }
  const originals = { tool: new Map(), ai: new Map() };
  for (const message of messages) {
    if (typeOf(message) === "tool") originals.tool.set(message.tool_call_id, message);
    for (const call of message.tool_calls ?? []) originals.ai.set(call.id, message);
  }
  const out = [];
  result.messages.forEach((m, i) => {
    const kept = result.unchanged[i] - head.length;
    if (result.unchanged[i] >= 0 && kept < 0) return; // the system prompt
    out.push(result.unchanged[i] >= 0 ? messages[kept] : rebuilt(m, originals));
  });
  return { messages: out, report, recallable };
}

/** Whether two LangChain messages are the same message (the same object, or the same id). */
function same(a, b) {
  return a === b || (a?.id !== undefined && a.id === b?.id);
}

/**
 * A `createAgent` middleware that compacts the messages of each model call past the trigger,
 * leaving the agent's state whole. `options` are those of `compact()` (a `model` or a `window`,
 * `trigger`, `targetRatio`, the tool options, `overhead`…) and `onCompaction(report)`.
 *
 * As a `Session` does, it remembers what it sent for each conversation (by its first message):
 * when the state has only grown since, the next call sends that plus the new messages, and
 * compacts again only when they pass the trigger. Between compactions, what a call sends only
 * grows at its end, so a provider's prompt cache keeps hitting.
 *
 * Every note names a handle (`handles: true` unless given), and the middleware gives the agent
 * a `ctxcompact_recall` tool: what a compaction removed is kept in memory by handle, at most
 * `recallMaxBytes` (64 MiB unless given, the oldest going first; the
 * agent's state holds it whole too), and the tool gives it back exactly, one JSON message a
 * line; nothing is written.
 */
export function ctxcompactMiddleware(options = {}) {
  const { onCompaction, recallMaxBytes, ...rest } = options;
  const sent = new WeakMap();
  const kept = new RecallStore(recallMaxBytes);
  const recall = tool(async ({ handle }) => recallFrom(kept, handle), {
    name: RECALL_NAME,
    description: RECALL_DESCRIPTION,
    schema: {
      type: "object",
      properties: { handle: { type: "string", description: "The handle a `[ctxcompact: …]` note names." } },
      required: ["handle"],
    },
  });
  return createMiddleware({
    name: "ctxcompact",
    tools: [recall],
    wrapModelCall: (request, handler) => {
      const history = request.messages;
      const last = history.length > 0 ? sent.get(history[0]) : undefined;
      const grown = last !== undefined
        && history.length >= last.input.length
        && last.input.every((m, i) => same(m, history[i]));
      const base = grown ? [...last.output, ...history.slice(last.input.length)] : history;
      const { messages, report, recallable } = compactLangChainMessages(base, {
        handles: true,
        ...rest,
        systemPrompt: request.systemPrompt,
      });
      if (report.action !== "within_budget") {
        kept.keep(recallable);
        onCompaction?.(report);
      }
      if (history.length > 0) sent.set(history[0], { input: history, output: messages });
      return handler(messages === history ? request : { ...request, messages });
    },
  });
}

// The AI SDK's ModelMessage list as OpenAI Chat messages for the compactor, and the compactor's
// output back as ModelMessages, losslessly.
//
// Each ModelMessage becomes the OpenAI messages that count and pair as it does: an assistant
// message's text and reasoning as its content and its tool calls as `tool_calls` (arguments
// as JSON text), each tool result as a `tool` message of its own (its output as text), user
// and system text as content. Provider-executed calls, which carry their results inside the
// assistant message, are text there. On the way back, every output message the compactor left
// unchanged stands for its ModelMessage, which is returned as the very object that went in: so
// whatever OpenAI Chat cannot say (files, reasoning signatures, provider options, approvals)
// is kept as it was. Only what the compactor rewrote (a cleared tool result, a cleared call's
// input, the marker that stands for removed history, a shortened task) is built anew, from the
// original message it came from where there is one.

/** The text a tool result's output is sent as. */
function outputText(output) {
  switch (output?.type) {
    case "text":
    case "error-text":
      return output.value;
    case "json":
    case "error-json":
      return JSON.stringify(output.value);
    case "execution-denied":
      return output.reason ?? "execution denied";
    case "content":
      return output.value
        .map((part) => (part.type === "text" ? part.text : `[${part.type} ${part.mediaType ?? ""}]`))
        .join("\n");
    default:
      return JSON.stringify(output ?? null);
  }
}

/** The text of a part that has no place of its own in OpenAI Chat. */
function partText(part) {
  switch (part.type) {
    case "text":
    case "reasoning":
      return part.text;
    case "tool-call":
      return `[${part.toolName} ${JSON.stringify(part.input)}]`;
    case "tool-result":
      return outputText(part.output);
    default:
      return `[${part.type}${part.mediaType ? ` ${part.mediaType}` : ""}${part.filename ? ` ${part.filename}` : ""}]`;
  }
}

function joined(parts) {
  return parts.map(partText).filter((text) => text !== "").join("\n");
}

/**
 * OpenAI Chat messages for `messages`, and for each of them the index of the ModelMessage it
 * comes from. A ModelMessage that has no OpenAI counterpart of its own (a tool message holding
 * approval responses alone) goes with the one before it.
 */
export function toOpenAI(messages) {
  const openai = [];
  const from = [];
  messages.forEach((message, index) => {
    const add = (m) => {
      openai.push(m);
      from.push(index);
    };
    const content = message.content;
    switch (message.role) {
      case "system":
        add({ role: "system", content: typeof content === "string" ? content : joined(content) });
        break;
      case "user":
        add({ role: "user", content: typeof content === "string" ? content : joined(content) });
        break;
      case "assistant": {
        if (typeof content === "string") {
          add({ role: "assistant", content });
          break;
        }
        const calls = content.filter((p) => p.type === "tool-call" && !p.providerExecuted);
        const rest = content.filter(
          (p) => !(p.type === "tool-call" && !p.providerExecuted) && p.type !== "tool-approval-request",
        );
        const m = { role: "assistant", content: joined(rest) };
        if (calls.length > 0) {
          m.tool_calls = calls.map((call) => ({
            id: call.toolCallId,
            type: "function",
            function: { name: call.toolName, arguments: JSON.stringify(call.input ?? {}) },
          }));
        }
        add(m);
        break;
      }
      case "tool": {
        const results = content.filter((p) => p.type === "tool-result");
        for (const part of results) {
          add({ role: "tool", tool_call_id: part.toolCallId, content: outputText(part.output) });
        }
        if (results.length === 0 && openai.length > 0) {
          // Approval responses alone: kept with the message before them, whose calls they answer.
          from[from.length - 1] = [from[from.length - 1], index].flat();
        }
        break;
      }
      default:
        throw new TypeError(`message ${index}: unknown role ${JSON.stringify(message.role)}`);
    }
  });
  return { openai, from };
}

/**
 * The ModelMessages for the compactor's output: `output` the OpenAI messages it gave, and
 * `unchanged[i]` the index of the input OpenAI message output message `i` is unchanged from
 * (-1 when new or changed); `messages` and `from` are the input and `toOpenAI`'s mapping.
 */
export function fromOpenAI(output, unchanged, messages, from) {
  const sources = from.map((f) => [f].flat());
  // Which input OpenAI messages each ModelMessage became, and which message holds each call.
  const expected = new Map();
  sources.forEach((list, openaiIndex) => {
    const first = list[0];
    expected.set(first, [...(expected.get(first) ?? []), openaiIndex]);
  });
  const holder = new Map();
  messages.forEach((message, index) => {
    if (Array.isArray(message.content)) {
      for (const part of message.content) {
        if (part.type === "tool-call" || part.type === "tool-result") {
          holder.set(`${message.role}:${part.toolCallId}`, index);
        }
      }
    }
  });
  // Each output message with the ModelMessage it stands for (`null`: a new one).
  const entries = output.map((m, i) => {
    const kept = unchanged[i] ?? -1;
    if (kept >= 0) return { m, kept, source: sources[kept][0] };
    if (m.role === "tool") return { m, kept, source: holder.get(`tool:${m.tool_call_id}`) ?? null };
    if (m.role === "assistant" && m.tool_calls?.length) {
      return { m, kept, source: holder.get(`assistant:${m.tool_calls[0].id}`) ?? null };
    }
    return { m, kept, source: null };
  });
  const result = [];
  for (let i = 0; i < entries.length; ) {
    let j = i + 1;
    if (entries[i].source !== null) {
      while (j < entries.length && entries[j].source === entries[i].source) j += 1;
    }
    result.push(...rebuilt(entries.slice(i, j), messages, sources, expected));
    i = j;
  }
  return result;
}

/** The ModelMessages for consecutive output entries that come from one ModelMessage. */
function rebuilt(group, messages, sources, expected) {
  const { source } = group[0];
  if (source === null) {
    return group.map(({ m }) => fresh(m));
  }
  const original = messages[source];
  const whole = expected.get(source) ?? [];
  const untouched = group.length === whole.length && group.every(({ kept }, k) => kept === whole[k]);
  // ModelMessages that went along with this one (approval responses alone).
  const along = (whole.length > 0 ? sources[whole.at(-1)].slice(1) : []).map((k) => messages[k]);
  if (untouched) return [original, ...along];
  if (original.role === "tool") {
    const parts = [];
    for (const { m } of group) {
      const part = original.content.find((p) => p.type === "tool-result" && p.toolCallId === m.tool_call_id);
      if (part && outputText(part.output) === m.content) {
        parts.push(part);
      } else if (part) {
        parts.push({ ...part, output: { type: "text", value: m.content } });
      }
    }
    const approvals = original.content.filter((p) => p.type !== "tool-result");
    return [{ ...original, content: [...approvals, ...parts] }, ...along];
  }
  if (original.role === "assistant" && Array.isArray(original.content)) {
    const inputs = new Map();
    for (const { m } of group) {
      for (const call of m.tool_calls ?? []) inputs.set(call.id, call.function.arguments);
    }
    const content = original.content.map((part) => {
      if (part.type !== "tool-call" || !inputs.has(part.toolCallId)) return part;
      const text = inputs.get(part.toolCallId);
      if (text === JSON.stringify(part.input ?? {})) return part;
      let input;
      try {
        input = JSON.parse(text);
      } catch {
        input = text;
      }
      return { ...part, input };
    });
    return [{ ...original, content }, ...along];
  }
  return [...group.map(({ m }) => ({ ...original, content: m.content })), ...along];
}

/** A ModelMessage for an OpenAI message the compactor wrote (a marker): its text. */
function fresh(m) {
  const role = m.role === "system" || m.role === "assistant" ? m.role : "user";
  const content = typeof m.content === "string" ? m.content : joinedOpenAI(m.content);
  return { role, content };
}

function joinedOpenAI(content) {
  return (content ?? []).map((part) => part.text ?? "").join("\n");
}

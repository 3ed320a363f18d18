// Deterministic compaction of LLM conversation histories, from JavaScript.
//
// Every function takes a conversation in a format the library reads: a list of message objects
// (OpenAI Chat Completions), a request body object (OpenAI, Anthropic, Responses, Gemini,
// Bedrock), or the text of a file (a body, or a session log such as a Claude Code JSONL
// transcript). Data is sent to the Rust addon as its JSON text and read there as the command
// line reads a file, so results equal `ctxcompact compact` on the same file and options: a
// string in gives the very bytes the command line writes, data in gives the same data. Options
// are the command line's flags in camelCase. Errors are `CtxcompactError`s whose `code` names
// their kind.

import { createRequire } from "node:module";

const native = createRequire(import.meta.url)("./ctxcompact.node");

/** The error codes, one per kind of failure, with the command line's exit code for each. */
export const codes = Object.freeze({
  /** The conversation is malformed, breaks tool-call pairing, or its format cannot be told. */
  input: "ERR_CTXCOMPACT_INPUT",
  /** Even the pinned messages (system, task, last request, last unit) exceed the budget. */
  cannotFit: "ERR_CTXCOMPACT_CANNOT_FIT",
  /** An option has an unusable value, conflicts with another, or names an unknown model. */
  options: "ERR_CTXCOMPACT_OPTIONS",
  /** A handle `recallRequest` cannot give back: malformed, or named by no compaction of the history. */
  recall: "ERR_CTXCOMPACT_RECALL",
});

// The addon's kinds of failure, by their codes.
const KINDS = {
  input: codes.input,
  cannot_fit: codes.cannotFit,
  options: codes.options,
  recall: codes.recall,
};

/** Every error ctxcompact throws: `code` names the kind, `exitCode` is the command line's. */
export class CtxcompactError extends Error {
  constructor(code, message, details = {}) {
    super(message);
    this.name = "CtxcompactError";
    this.code = code;
    this.exitCode = code === codes.cannotFit ? 3 : 2;
    /** The index into the input's messages, when one message is at fault. */
    this.messageIndex = details.messageIndex;
    /** The field path inside it, when one field is at fault. */
    this.field = details.field;
    /** For `ERR_CTXCOMPACT_CANNOT_FIT`: the report of the attempt (`action` `cannot_fit`). */
    this.report = details.report;
  }
}

const FORMATS = [
  "auto", "openai", "anthropic", "responses", "gemini", "bedrock", "ai-sdk",
  "claude-code", "codex", "gemini-cli", "pi",
];
const REQUEST_FORMATS = ["openai", "anthropic", "responses", "gemini", "bedrock"];
const TOKENIZERS = [
  "o200k", "cl100k", "chars", "llama3", "qwen2", "deepseek-v3", "tekken", "kimi-k2", "glm4",
  "minimax-m2", "claude-opus", "claude-sonnet", "claude-haiku", "gemini",
];
const CLIENTS = ["claude-code", "codex", "gemini-cli"];
const STRATEGIES = ["auto", "middle", "oldest", "relevant"];
const TOOL_MODES = ["clear", "drop", "off"];
const MARKERS = ["digest", "brief", "none"];

function optionError(message) {
  return new CtxcompactError(codes.options, message);
}

function choice(name, value, allowed) {
  if (!allowed.includes(value)) {
    throw optionError(`${name} must be one of ${allowed.join(", ")}; got ${JSON.stringify(value)}`);
  }
  return value;
}

function whole(name, value) {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw optionError(`${name} must be a whole number of 0 or more, not ${String(value)}`);
  }
  return value;
}

function share(name, value) {
  if (typeof value !== "number" || !Number.isFinite(value)) {
    throw optionError(`${name} must be a finite number, not ${String(value)}`);
  }
  return value;
}

function flag(name, value) {
  if (typeof value !== "boolean") {
    throw optionError(`${name} must be true or false, not ${String(value)}`);
  }
  return value;
}

function text(name, value) {
  if (typeof value !== "string") {
    throw optionError(`${name} must be a string, not ${typeof value}`);
  }
  return value;
}

// Each option: its name in the library's settings, and its check. `null` means "the call's own".
const LIBRARY_OPTIONS = {
  model: ["model", text],
  target: ["target", whole],
  ratio: ["ratio", share],
  trigger: ["trigger", share],
  targetRatio: ["target_ratio", share],
  strategy: ["strategy", (n, v) => choice(n, v, STRATEGIES)],
  marker: ["marker", (n, v) => (typeof v === "boolean" ? (v ? "digest" : "none") : choice(n, v, MARKERS))],
  digestTokens: ["digest_tokens", whole],
  toolMode: ["tool_mode", (n, v) => choice(n, v, TOOL_MODES)],
  keepToolRounds: ["keep_tool_rounds", whole],
  excludeTools: ["exclude_tools", toolNames],
  clearToolInputs: ["clear_tool_inputs", flag],
  clearAtLeast: ["clear_at_least", whole],
  maxToolOutput: ["max_tool_output", whole],
  tokenizer: ["tokenizer", (n, v) => choice(n, v, TOKENIZERS)],
  catalog: ["catalog", text],
  calibration: ["calibration", text],
  archiveDir: ["archive", text],
  handles: ["handles", flag],
  overhead: ["overhead", whole],
  optimize: ["optimize_cost", (n, v) => choice(n, v, ["cost", "efficiency"]) === "cost"],
};
const CALL_OPTIONS = {
  format: (n, v) => choice(n, v, FORMATS),
  window: whole,
  repair: flag,
  strict: flag,
};

// One tool name, the command line's comma-separated list, or an array of names.
function toolNames(name, value) {
  const names = typeof value === "string" ? value.split(",") : value;
  if (!Array.isArray(names) || names.some((n) => typeof n !== "string")) {
    throw optionError(`${name} must be tool names`);
  }
  return names;
}

// The settings object the addon reads, from the options of a call that takes `allowed`;
// `data` is the conversation when it is data, whose list lengths the addon is told; `call`
// holds the call's settings already read.
function settings(options, allowed, data, call = {}) {
  if (options === undefined || options === null) {
    options = {};
  }
  if (typeof options !== "object" || Array.isArray(options)) {
    throw optionError("the options must be an object");
  }
  const library = {};
  for (const [name, value] of Object.entries(options)) {
    if (value === undefined) continue;
    if (!allowed.includes(name)) {
      throw optionError(`unknown option ${JSON.stringify(name)}; known: ${allowed.join(", ")}`);
    }
    if (name in CALL_OPTIONS) {
      call[name] = CALL_OPTIONS[name](name, value);
    } else if (name === "strategy" && value === "auto") {
      choice(name, value, STRATEGIES);
    } else {
      const [key, check] = LIBRARY_OPTIONS[name];
      library[key] = check(name, value);
    }
  }
  if (data !== undefined) call.lists = lists(data);
  return JSON.stringify({ ...call, library });
}

// The lengths of the lists in conversation data: the top level's, or those under its keys.
function lists(data) {
  if (Array.isArray(data)) return { top: data.length };
  return { keys: Object.entries(data).filter(([, v]) => Array.isArray(v)).map(([k, v]) => [k, v.length]) };
}

const TOOL_OPTIONS = [
  "toolMode", "keepToolRounds", "excludeTools", "clearToolInputs", "clearAtLeast", "maxToolOutput",
];
const READ_OPTIONS = ["format", "repair", "strict"];
const MODEL_OPTIONS = ["model", "tokenizer", "catalog", "calibration", "window"];
const BUDGET_OPTIONS = ["target", "ratio", "trigger", "targetRatio"];
const COMPACT_OPTIONS = [
  ...READ_OPTIONS, ...MODEL_OPTIONS, ...BUDGET_OPTIONS, ...TOOL_OPTIONS,
  "strategy", "marker", "digestTokens", "archiveDir", "handles", "optimize", "overhead",
];
const ANALYZE_OPTIONS = COMPACT_OPTIONS.filter((name) => name !== "archiveDir" && name !== "handles");
const TRIM_OPTIONS = [...READ_OPTIONS, ...MODEL_OPTIONS, ...TOOL_OPTIONS];
const COUNT_OPTIONS = [...READ_OPTIONS, ...MODEL_OPTIONS];

// The text the addon reads for a conversation, and whether the caller gave text.
function input(conversation) {
  if (typeof conversation === "string") return [conversation, true];
  if (conversation instanceof Uint8Array) return [Buffer.from(conversation).toString("utf8"), true];
  if (conversation === null || typeof conversation !== "object") {
    throw new CtxcompactError(
      codes.input,
      `the conversation must be a list of messages, a request body or its text, not ${conversation === null ? "null" : typeof conversation}`,
    );
  }
  let json;
  try {
    json = JSON.stringify(conversation);
  } catch (err) {
    throw new CtxcompactError(codes.input, `the conversation is not JSON data: ${err.message}`);
  }
  return [json, false];
}

// The outcome's value, or its failure thrown as a CtxcompactError.
function unwrap(outcome) {
  if (outcome.errorKind) {
    const code = KINDS[outcome.errorKind];
    throw new CtxcompactError(code, outcome.errorMessage, {
      messageIndex: outcome.messageIndex ?? undefined,
      field: outcome.field ?? undefined,
      report: outcome.value ? JSON.parse(outcome.value) : undefined,
    });
  }
  return outcome;
}

// The output data: whole, or the input's own unchanged messages put back among the changed.
function outputData(outcome, data) {
  if (outcome.changed === undefined || outcome.changed === null) return JSON.parse(outcome.output);
  const shell = JSON.parse(outcome.output);
  const changed = JSON.parse(outcome.changed);
  const source = outcome.listKey === "" ? data : data[outcome.listKey];
  let next = 0;
  const messages = outcome.unchanged.map((index) => (index >= 0 ? source[index] : changed[next++]));
  if (outcome.listKey === "") return messages;
  shell[outcome.listKey] = messages;
  return shell;
}

function compacted(outcome, conversation, asText) {
  const done = unwrap(outcome);
  return {
    body: asText ? done.output : outputData(done, conversation),
    report: JSON.parse(done.value),
  };
}

/**
 * Compacts a conversation to a token budget, as `ctxcompact compact` does: `{ body, report }`,
 * `body` in the input's shape (text for text). In output data, every message that came out
 * unchanged is the input's own object. Nothing is written on error.
 */
export function compact(conversation, options) {
  const [json, asText] = input(conversation);
  const data = asText ? undefined : conversation;
  return compacted(native.compact(json, settings(options, COMPACT_OPTIONS, data)), conversation, asText);
}

/** Trims old tool rounds alone, with no budget, as `ctxcompact trim-tools` does. */
export function trimTools(conversation, options) {
  const [json, asText] = input(conversation);
  const data = asText ? undefined : conversation;
  return compacted(native.trimTools(json, settings(options, TRIM_OPTIONS, data)), conversation, asText);
}

/** What `compact` would do, as `ctxcompact analyze --json` reports it; changes nothing. */
export function analyze(conversation, options) {
  const [json] = input(conversation);
  return JSON.parse(unwrap(native.analyze(json, settings(options, ANALYZE_OPTIONS))).value);
}

/** Tokens as `ctxcompact count --json` counts them: `{ total, messages, ... }`. */
export function count(conversation, options) {
  const [json] = input(conversation);
  return JSON.parse(unwrap(native.count(json, settings(options, COUNT_OPTIONS))).value);
}

/**
 * Every problem a provider refuses the conversation for as a request, as `ctxcompact validate`
 * finds them: `{ messageIndex, field, kind, callId, text }` objects; empty when valid.
 */
export function validate(conversation, options) {
  const [json] = input(conversation);
  return JSON.parse(unwrap(native.validate(json, settings(options, READ_OPTIONS))).value);
}

// The bytes of a provider request body: a Buffer, or a string's UTF-8.
function requestBytes(body) {
  if (typeof body === "string") return Buffer.from(body, "utf8");
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  throw optionError(`body must be a Buffer or a string, not ${typeof body}`);
}

// The settings object a request compactor reads, from `compactRequest`'s format and options.
function requestSettings(format, options) {
  const { pathModel, client, window, ...rest } = options ?? {};
  const call = { format: choice("format", format, REQUEST_FORMATS) };
  if (pathModel !== undefined) call.path_model = text("pathModel", pathModel);
  if (client !== undefined) call.client = choice("client", client, CLIENTS);
  if (window !== undefined) call.window = whole("window", window);
  return settings(rest, [
    "trigger", "targetRatio", "strategy", "marker", "digestTokens", "tokenizer", "catalog",
    "calibration", "archiveDir", "handles", ...TOOL_OPTIONS,
  ], undefined, call);
}

/** How many conversations a `RequestCompactor` keeps the replay of, unless told: the proxy's `--cache-entries`. */
const REQUEST_CONVERSATIONS = 1024;

/**
 * Decides what to forward for a provider request body, as `ctxcompact proxy` does: `body`,
 * the bytes to send (a Buffer; the received ones when nothing changed), beside the proxy
 * ledger's record of the decision (`action`, `reason`, `tokensReceived`, …, `facts`: see
 * index.d.ts). Never throws for the body: what cannot be read or fitted comes back unchanged
 * with `action` `failed_open`. A `RequestCompactor` made for this one call, which replays the
 * history whole.
 */
export function compactRequest(body, format, options = {}) {
  const bytes = requestBytes(body);
  return new RequestCompactor(format, options, 0).compact(bytes);
}

/**
 * What `handle` names, given back from the history of `body`: the messages (or items) a
 * compaction of it removed, one JSON message a line, each as the body holds it. For a caller
 * that keeps the history whole and compacts what each model call sends with `compactRequest`
 * and `handles: true` (or an `archiveDir`): `body` is a later call's body of the same history,
 * `options` those it was compacted with. The history is replayed as `compactRequest` replays
 * it; nothing is written. Throws `ERR_CTXCOMPACT_RECALL` for a malformed handle or one no
 * compaction of the history names (the message names it), `ERR_CTXCOMPACT_OPTIONS` on bad
 * options.
 */
export function recallRequest(body, format, handle, options = {}) {
  const bytes = requestBytes(body);
  return new RequestCompactor(format, options, 0).recall(bytes, handle);
}

/**
 * `compactRequest` and `recallRequest` for one format and one set of options, kept across
 * calls (a gateway's, an SDK hook's): the catalog and calibration are read once, and each
 * history resumes from the last call its cache holds (at most `conversations`, 1,024 unless
 * given) instead of replaying every earlier compaction. The bytes sent are the same.
 */
export class RequestCompactor {
  #native;

  /** `format` and `options` are `compactRequest`'s, checked as it checks them. */
  constructor(format, options = {}, conversations = REQUEST_CONVERSATIONS) {
    const json = requestSettings(format, options);
    const cached = whole("conversations", conversations);
    this.#native = new native.NativeRequestCompactor();
    unwrap(this.#native.start(json, cached));
  }

  /** What to forward for `body`, as `compactRequest` decides it. */
  compact(body) {
    const bytes = requestBytes(body);
    const outcome = unwrap(this.#native.compact(bytes));
    return { body: outcome.body ?? bytes, ...JSON.parse(outcome.value) };
  }

  /** What `handle` names in the history of `body`, as `recallRequest` gives it back. */
  recall(body, handle) {
    const bytes = requestBytes(body);
    return unwrap(this.#native.recall(bytes, text("handle", handle))).output;
  }
}

/**
 * An agent's conversation across its model calls: messages are counted once as they are
 * pushed, and `compactIfNeeded` compacts only past the trigger (70% of the window), down to
 * what its last 8 calls take (20% to 50% of the window; `targetRatio` exactly), so between compactions the conversation only grows at its end and a provider's
 * prompt cache keeps hitting.
 */
export class Session {
  #native;
  #asText;

  /**
   * `conversation` is the start (a body, a list of messages, possibly empty, or its text);
   * `options` are those of `compact` with a `model` or a `window` (or a `target`: trigger and
   * target both that number).
   */
  constructor(conversation = [], options = {}) {
    const [json, asText] = input(conversation);
    this.#asText = asText;
    this.#native = new native.NativeSession();
    unwrap(this.#native.start(json, settings(options, COMPACT_OPTIONS)));
  }

  /** Appends messages (one, or a list) in the session's format. */
  push(...messages) {
    const list = messages.flat();
    unwrap(this.#native.push(JSON.stringify(list)));
  }

  /** Compacts past the trigger: the report, or `null` when the session only appended. */
  compactIfNeeded() {
    const outcome = unwrap(this.#native.compactIfNeeded());
    return outcome.value ? JSON.parse(outcome.value) : null;
  }

  /** Records the input size the provider reported for the conversation as it is now. */
  observeUsage(inputTokens) {
    this.#native.observeUsage(whole("inputTokens", inputTokens));
  }

  /** The conversation as it would be sent now, in the shape it was given (text for text). */
  get body() {
    const rendered = this.#native.render();
    return this.#asText ? rendered : JSON.parse(rendered);
  }

  /** The tokens the conversation costs now. */
  get tokens() {
    return this.#native.figures()[0];
  }

  /** The token count above which `compactIfNeeded` compacts. */
  get trigger() {
    return this.#native.figures()[1];
  }

  /** How many times the session has compacted. */
  get compactions() {
    return this.#native.figures()[2];
  }

  /** How many messages the conversation holds. */
  get length() {
    return this.#native.figures()[3];
  }
}

/**
 * For the adapters: compacts a list of OpenAI Chat messages, giving for each output message the
 * index of the input message it is unchanged from (-1 when it is new or changed).
 * @internal
 */
export function compactMessages(messages, options) {
  const outcome = unwrap(native.compact(JSON.stringify(messages), settings(options, COMPACT_OPTIONS, messages)));
  return {
    messages: outputData(outcome, messages),
    report: JSON.parse(outcome.value),
    unchanged: outcome.unchanged,
    recallable: JSON.parse(outcome.recallable ?? "{}"),
  };
}

// A handle as the notes name it: a conversation's and a file's 12 hexadecimal digits.
const HANDLE = /^[0-9a-f]{12}\/[0-9a-f]{12}$/;

/** The recall tool's name, in every framework. */
export const RECALL_NAME = "ctxcompact_recall";

/** The recall tool's description, in every framework. */
export const RECALL_DESCRIPTION =
  "Give back what ctxcompact removed from this conversation to fit the model's window: the " +
  "messages or tool output a `[ctxcompact: …]` note stands for, exactly as they were, one JSON " +
  "message a line. Pass the handle the note names (`handle 3fa2c1d0e9ab/7c1b2e3f4a5d`).";

/** How many bytes of removed history an adapter keeps for its recall tool, unless told. */
export const RECALL_MAX_BYTES = 64 * 1024 * 1024;

/**
 * What an adapter's compactions removed, by handle, in memory: at most `maxBytes` (the UTF-8
 * bytes of what the handles stand for). Past it, the handles kept longest ago go first, so one
 * adapter serving conversation after conversation in a long-running process stays within the
 * bound; a recall of a handle that went says so.
 */
export class RecallStore {
  constructor(maxBytes = RECALL_MAX_BYTES) {
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 1) {
      throw new RangeError(`recallMaxBytes: expected a whole number of bytes above 0, got ${maxBytes}`);
    }
    this.maxBytes = maxBytes;
    this.bytes = 0;
    this.kept = new Map();
  }

  /** Keeps a compaction's `recallable` (handle → what it stands for), newest last. */
  keep(recallable) {
    for (const [handle, content] of Object.entries(recallable)) {
      this.#drop(handle);
      this.kept.set(handle, content);
      this.bytes += Buffer.byteLength(content);
    }
    while (this.bytes > this.maxBytes) this.#drop(this.kept.keys().next().value);
  }

  /** What `handle` stands for, if it is kept. */
  get(handle) {
    return this.kept.get(handle);
  }

  #drop(handle) {
    const content = this.kept.get(handle);
    if (content === undefined) return;
    this.kept.delete(handle);
    this.bytes -= Buffer.byteLength(content);
  }
}

/**
 * A recall tool's answer from `kept` (a `RecallStore`, or a Map of handle to what it stands
 * for): the messages one JSON line each, or a sentence naming a handle it cannot give back.
 */
export function recallFrom(kept, handle) {
  const asked = typeof handle === "string" ? handle.trim() : "";
  if (!HANDLE.test(asked)) {
    return `ctxcompact recall: \`${String(handle)}\` is not a ctxcompact handle: a handle is two ` +
      "groups of 12 hexadecimal digits, `<conversation>/<file>`, as a marker or placeholder names it";
  }
  return kept.get(asked) ??
    `ctxcompact recall: nothing is kept under handle \`${asked}\`: no compaction of this ` +
      "conversation removed anything under it, or it went to keep the adapter within `recallMaxBytes`";
}

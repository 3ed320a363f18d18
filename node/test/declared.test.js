// index.d.ts lists the fields of what the package returns by hand: each result's keys are the
// ones it declares, no more, and every key it declares is returned by some call; so are the
// keys of each object a result holds whose type index.d.ts declares (a record's facts, a
// compaction's report and its features and rules).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, it } from "node:test";

import * as ctxcompact from "../index.js";

const TYPES = readFileSync(join(dirname(fileURLToPath(import.meta.url)), "..", "index.d.ts"), "utf8")
  .replace(/\/\*[\s\S]*?\*\//g, "")
  .replace(/\/\/.*$/gm, "");

/**
 * The members index.d.ts declares for the interface or class `name`: `required` and `optional`
 * names (a constructor left out), each one's `types` (the text after its colon), and whether an
 * index signature leaves it `open` to others.
 */
function declared(name) {
  const start = TYPES.search(new RegExp(`export (?:declare )?(?:interface|class) ${name}\\b`));
  assert.ok(start >= 0, `index.d.ts declares ${name}`);
  const members = { required: new Set(), optional: new Set(), types: new Map(), open: false };
  let depth = 0;
  for (const line of TYPES.slice(TYPES.indexOf("{", start)).split("\n")) {
    const found = depth === 1 && line.match(/^\s*(?:readonly\s+)?(\w+)(\??)\s*([:(<])\s*([^;]*)/);
    if (depth === 1 && /^\s*\[key: string\]/.test(line)) members.open = true;
    if (found && found[1] !== "constructor") {
      members[found[2] ? "optional" : "required"].add(found[1]);
      if (found[3] === ":") members.types.set(found[1], found[4].trim());
    }
    for (const c of line) {
      if (c === "{") depth += 1;
      if (c === "}") depth -= 1;
    }
    if (depth === 0) break;
  }
  return members;
}

/**
 * The interface of index.d.ts a member's declared type names, alone or as a list of them (with
 * `| null` or not): `Report`, `RequestFacts[] | null`; else `undefined`.
 */
function nested(type) {
  const named = type?.match(/^(\w+)(\[\])?(?:\s*\|\s*null)?$/);
  if (!named || !new RegExp(`export (?:declare )?interface ${named[1]}\\b`).test(TYPES)) return undefined;
  return { name: named[1], list: named[2] !== undefined };
}

// The keys returned so far of each interface checked: after every test, each one's optional
// keys must all have been returned by some call.
const returned = new Map();
after(() => {
  for (const [name, seen] of returned) {
    for (const key of declared(name).optional) assert.ok(seen.has(key), `${name}.${key} is declared, never returned`);
  }
});

/**
 * Asserts that each of `results` holds what `name` declares (its optional keys: by some call
 * of this file); then the same of each member whose declared type is an interface of
 * index.d.ts, over the values the results hold for it.
 */
function holdsDeclared(name, results) {
  const { required, optional, types, open } = declared(name);
  if (!returned.has(name)) returned.set(name, new Set());
  const seen = returned.get(name);
  for (const result of results) {
    const keys = Object.keys(result);
    keys.forEach((key) => seen.add(key));
    for (const key of required) assert.ok(keys.includes(key), `${name}.${key} is declared, not returned`);
    if (!open) {
      for (const key of keys) {
        assert.ok(required.has(key) || optional.has(key), `${name}: \`${key}\` is returned, not declared`);
      }
    }
  }
  for (const [key, type] of types) {
    const inner = nested(type);
    if (inner === undefined) continue;
    const values = results.map((result) => result[key]).filter((value) => value !== undefined && value !== null);
    assert.ok(values.length > 0, `${name}.${key} (${type}) is never returned to check`);
    holdsDeclared(inner.name, inner.list ? values.flat() : values);
  }
}

/** An OpenAI Chat history of a task and `rounds` tool rounds with large results. */
function history(rounds) {
  const messages = [
    { role: "system", content: "You are a coding agent." },
    { role: "user", content: "Read every file under src/ and summarise them." },
  ];
  for (let i = 0; i < rounds; i += 1) {
    messages.push(
      { role: "assistant", content: null, tool_calls: [{ id: `call_${i}`, type: "function", function: { name: "read_file", arguments: `{"path": "src/f${i}.rs"}` } }] },
      { role: "tool", tool_call_id: `call_${i}`, content: Array.from({ length: 400 }, (_, k) => `line${i}_${k}`).join(" ") },
    );
  }
  return messages;
}

it("compactRequest and a RequestCompactor return the fields ForwardedRequest declares", () => {
  const body = (rounds) => JSON.stringify({ model: "gpt-4o", messages: history(rounds) });
  const options = { window: 20_000 };
  const kept = new ctxcompact.RequestCompactor("openai", options);
  const results = [
    ctxcompact.compactRequest(body(1), "openai", options),
    ctxcompact.compactRequest(body(40), "openai", { ...options, client: "codex" }),
    ctxcompact.compactRequest("not json", "openai", options),
    kept.compact(body(30)),
    kept.compact(body(40)),
  ];
  assert.deepEqual(results.map((r) => r.action), ["forwarded", "compacted", "failed_open", "compacted", "compacted"]);
  holdsDeclared("ForwardedRequest", results);
  const members = Object.getOwnPropertyNames(ctxcompact.RequestCompactor.prototype).filter((name) => name !== "constructor");
  holdsDeclared("RequestCompactor", [Object.fromEntries(members.map((name) => [name, true]))]);
});

it("validate returns the fields Problem declares", () => {
  const broken = [...history(2), { role: "tool", tool_call_id: "call_x", content: "orphan" }];
  broken.splice(3, 1);
  const problems = ctxcompact.validate(broken);
  assert.ok(problems.length >= 2, JSON.stringify(problems));
  holdsDeclared("Problem", problems);
});

it("compact, trimTools, analyze and Session return what their types declare", () => {
  const messages = history(30);
  const compacted = ctxcompact.compact(messages, { target: 3_000 });
  const trimmed = ctxcompact.trimTools(messages, {});
  holdsDeclared("Compacted", [compacted, trimmed]);
  const session = new ctxcompact.Session(history(0), { window: 20_000 });
  session.push(history(40).slice(2));
  const report = session.compactIfNeeded();
  assert.equal(report.action, "compacted");
  // A chat with no tool messages, whose request refers back: its features measure how much.
  const chat = [
    { role: "user", content: "What does the parser in src/parse.rs do with tabs? It reads the file line by line and the tokenizer splits words." },
    { role: "assistant", content: "It expands them to four spaces before tokenizing, in the parser function read_line of src/parse.rs." },
    { role: "user", content: "Something else entirely." },
    { role: "assistant", content: "Okay, here is the answer about cooking pasta and many other things." },
    { role: "user", content: "And the parser in src/parse.rs with carriage returns and tabs?" },
  ];
  const reports = [compacted.report, trimmed.report, ctxcompact.analyze(messages, { target: 3_000 }), ctxcompact.analyze(chat, { target: 40 }), report];
  holdsDeclared("Report", reports);
  const members = Object.getOwnPropertyNames(ctxcompact.Session.prototype).filter((name) => name !== "constructor");
  holdsDeclared("Session", [Object.fromEntries(members.map((name) => [name, true]))]);
});

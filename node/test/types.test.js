// The hand-written types (index.d.ts, ai-sdk.d.ts, langchain.d.ts) compile against the AI SDK's
// and LangChain.js's own types, as test/types/usage.ts uses them.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { it } from "node:test";

const here = dirname(fileURLToPath(import.meta.url));
const tsc = join(here, "..", "node_modules", "typescript", "bin", "tsc");

it("the types describe the package as it is used", { skip: existsSync(tsc) ? false : "typescript is not installed (npm ci in node/)" }, () => {
  const done = spawnSync(process.execPath, [tsc, "-p", join(here, "types")], { encoding: "utf8" });
  assert.equal(done.status, 0, `${done.stdout}${done.stderr}`);
});

// Shared by the tests: the repository's folders and the ctxcompact command line.

import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const CONVERSATIONS = readdirSync(join(ROOT, "data", "conversations"))
  .filter((name) => name.endsWith(".json"))
  .sort()
  .map((name) => join(ROOT, "data", "conversations", name));
export const CORPUS = process.env.CTXCOMPACT_CORPUS ?? join(ROOT, "..", "shared", "corpus");

let cli;

/** The release command line, built once (`CTXCOMPACT_CLI` names a prebuilt one). */
export function cliPath() {
  if (cli) return cli;
  cli = process.env.CTXCOMPACT_CLI ?? join(ROOT, "target", "release", "ctxcompact");
  if (!process.env.CTXCOMPACT_CLI) {
    const built = spawnSync("cargo", ["build", "--release", "--locked", "--bin", "ctxcompact"], {
      cwd: ROOT,
      stdio: "inherit",
    });
    if (built.status !== 0 || !existsSync(cli)) throw new Error("cannot build the ctxcompact CLI");
  }
  return cli;
}

/** Runs the command line: `{ code, stdout, stderr }`. */
export function runCli(args) {
  const done = spawnSync(cliPath(), args, { cwd: ROOT, encoding: "utf8", maxBuffer: 1 << 30 });
  return { code: done.status, stdout: done.stdout, stderr: done.stderr };
}

/** Every file under `dir` whose name ends with one of `extensions`, sorted. */
export function filesUnder(dir, extensions) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true })
    .filter((name) => extensions.some((ext) => name.endsWith(ext)))
    .sort()
    .map((name) => join(dir, name));
}

#!/usr/bin/env node
// Drives one MCP server over stdio with the official TypeScript SDK client
// (`@modelcontextprotocol/sdk` on npm: `Client` + `StdioClientTransport`) and
// prints calls/s. The same interface as mcp_client.py:
//
//   node mcp_client.mjs --npm-prefix DIR --tool bash --arguments '{"command": "echo hi"}' \
//       [--calls 400] [--concurrency 8] [--warmup 20] [--expect hi] [--control] -- SERVER [ARGS...]
//
// `--npm-prefix` is the directory the SDK was installed into with
// `npm install --prefix DIR @modelcontextprotocol/sdk` (this script is not
// inside it, so it loads the SDK from there).
//
// The server gets this process's environment and working directory; its
// stderr is ignored. One-shot (default): initialize, list tools, `--warmup`
// calls sequentially and `--warmup` with `--concurrency` in flight (not
// counted), then `--calls` calls with a pool of `--concurrency` workers on the
// one client, print a JSON line, exit. `--control`: after the warm-up print
// `{"ready": ...}`, then answer each stdin line `CALLS CONCURRENCY` with a
// JSON line until stdin ends. An error answer (`isError`, a thrown error, or
// no `--expect` text in the content) counts as a failure, not a fast call.

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { createInterface } from "node:readline";

function parse(argv) {
  const options = { calls: 400, concurrency: 1, warmup: 20, expect: "hi", control: false };
  const separator = argv.indexOf("--");
  if (separator < 0 || separator === argv.length - 1) {
    throw new Error("usage: mcp_client.mjs --npm-prefix DIR --tool NAME --arguments JSON [...] -- SERVER [ARGS...]");
  }
  const flags = argv.slice(0, separator);
  options.server = argv.slice(separator + 1);
  for (let index = 0; index < flags.length; index += 1) {
    const flag = flags[index];
    const value = () => {
      index += 1;
      if (index >= flags.length) throw new Error(`${flag} needs a value`);
      return flags[index];
    };
    switch (flag) {
      case "--npm-prefix": options.npmPrefix = value(); break;
      case "--tool": options.tool = value(); break;
      case "--arguments": options.arguments = JSON.parse(value()); break;
      case "--calls": options.calls = Number.parseInt(value(), 10); break;
      case "--concurrency": options.concurrency = Number.parseInt(value(), 10); break;
      case "--warmup": options.warmup = Number.parseInt(value(), 10); break;
      case "--expect": options.expect = value(); break;
      case "--control": options.control = true; break;
      default: throw new Error(`unknown option ${flag}`);
    }
  }
  for (const required of ["npmPrefix", "tool", "arguments"]) {
    if (options[required] === undefined) throw new Error(`--${required.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} is required`);
  }
  return options;
}

function failureOf(result, expect) {
  const text = (result.content ?? []).map((block) => block.text ?? "").join("");
  if (result.isError || !text.includes(expect)) return `error answer: ${JSON.stringify(text.slice(0, 200))}`;
  return null;
}

async function run(client, options, calls, concurrency) {
  const failures = [];
  let next = 0;
  let busy = 0;
  const worker = async () => {
    while (next < calls) {
      next += 1;
      const start = performance.now();
      let reason;
      try {
        const result = await client.callTool(
          { name: options.tool, arguments: options.arguments },
          undefined,
          { timeout: 30_000 },
        );
        reason = failureOf(result, options.expect);
      } catch (error) {
        reason = `${error?.name ?? "Error"}: ${error?.message ?? error}`;
      }
      busy += performance.now() - start;
      if (reason !== null) failures.push(reason);
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: Math.min(concurrency, calls) }, worker));
  const seconds = (performance.now() - start) / 1000;
  return {
    calls,
    concurrency,
    seconds,
    calls_per_second: seconds > 0 ? (calls - failures.length) / seconds : 0,
    failures: failures.length,
    first_failure: failures[0] ?? null,
    call_ms: calls > 0 ? busy / calls : 0,
  };
}

function emit(line) {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

async function main() {
  const options = parse(process.argv.slice(2));
  const requireSdk = createRequire(join(options.npmPrefix, "package.json"));
  const { Client } = requireSdk("@modelcontextprotocol/sdk/client/index.js");
  const { StdioClientTransport } = requireSdk("@modelcontextprotocol/sdk/client/stdio.js");
  // The package's exports map `./*` into dist/, so its manifest is read by path.
  const sdkManifest = join(options.npmPrefix, "node_modules", "@modelcontextprotocol", "sdk", "package.json");
  const versions = {
    node: process.versions.node,
    "@modelcontextprotocol/sdk": JSON.parse(readFileSync(sdkManifest, "utf8")).version,
  };

  const transport = new StdioClientTransport({
    command: options.server[0],
    args: options.server.slice(1),
    env: { ...process.env },
    cwd: process.cwd(),
    stderr: "ignore",
  });
  const client = new Client({ name: "bashtool-bench", version: "1" });
  await client.connect(transport);
  await client.listTools();
  const warm = [
    await run(client, options, options.warmup, 1),
    await run(client, options, options.warmup, options.concurrency),
  ];
  const failed = warm.find((line) => line.failures > 0);
  if (!options.control) {
    const line = failed ?? (await run(client, options, options.calls, options.concurrency));
    emit({ client: "typescript", versions, ...line });
    await client.close();
    return;
  }
  emit({ ready: failed === undefined, client: "typescript", versions, first_failure: failed?.first_failure ?? null });
  const input = createInterface({ input: process.stdin, terminal: false });
  for await (const request of input) {
    const [calls, concurrency] = request.trim().split(/\s+/).map((field) => Number.parseInt(field, 10));
    emit(await run(client, options, calls, concurrency));
  }
  await client.close();
}

main().catch((error) => {
  process.stderr.write(`mcp_client.mjs: ${error?.stack ?? error}\n`);
  process.exit(1);
});

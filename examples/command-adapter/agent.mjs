#!/usr/bin/env node
// A RuleDrift command adapter in Node (no dependencies).
//
// RuleDrift runs this script once per model call: it writes one JSON request to stdin and reads one
// JSON response from stdout (protocol "ruledrift.command.v1", see docs/command-adapter.md). Replace
// `answer` with a call to your agent; keep the rest.

const PROTOCOL = "ruledrift.command.v1";

// A STAND-IN FOR YOUR AGENT: call your agent here with `messages` and return its answer
// (it may be async: `return await myAgent.chat(messages)`).
//
// This toy is deterministic and obeys one kind of rule: a line of the system message that says
// never to say a quoted word (`Never say "swordfish".`) makes it redact that word. It echoes the
// last user message, prefixed with where in the conversation it is.
async function answer(messages, context) {
  const system = messages[0]?.role === "system" ? messages[0].content : "";
  const forbidden = system
    .split("\n")
    .filter((line) => line.toLowerCase().includes("never"))
    .flatMap((line) => [...line.matchAll(/"([^"]+)"/g)].map((match) => match[1]));
  let said = messages.findLast((m) => m.role === "user")?.content ?? "";
  for (const word of forbidden) {
    const escaped = word.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    said = said.replace(new RegExp(escaped, "gi"), "[redacted]");
  }
  const where =
    context.kind === "turn"
      ? `turn ${context.turn}`
      : `probe ${context.probe} after turn ${context.afterTurn}`;
  return `[${context.scenario}, ${where}] You said: ${said}`;
}

async function main() {
  try {
    const chunks = [];
    for await (const chunk of process.stdin) chunks.push(chunk);
    const request = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    if (request.protocol !== PROTOCOL) {
      throw new Error(`unsupported protocol ${JSON.stringify(request.protocol)}`);
    }
    const content = await answer(request.messages, request.context);
    process.stdout.write(JSON.stringify({ content }) + "\n");
  } catch (error) {
    // Report it: RuleDrift shows the message and our stderr. Logs go to stderr, never stdout.
    console.error(error);
    process.stdout.write(JSON.stringify({ error: String(error) }) + "\n");
    // Set the exit code rather than calling process.exit(), which may cut stdout short.
    process.exitCode = 1;
  }
}

await main();

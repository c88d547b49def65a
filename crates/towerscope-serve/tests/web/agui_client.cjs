// Runs the official AG-UI client (`@ag-ui/client`'s HttpAgent, which validates every event
// against the protocol's schemas and sequence rules) against the router at argv[2]: a tool
// round, a follow-up message, a front-end tool round, a confirmation interrupt, a run sent
// again after its answer was lost, and a model call restarted mid-answer. Prints one
// line per check; exits 1 on the first failure.
"use strict";
const path = require("node:path");
const modules = process.env.TOWERSCOPE_NODE_MODULES;
if (!modules) {
  console.error("TOWERSCOPE_NODE_MODULES is not set (scripts/web-clients.sh prints it)");
  process.exit(2);
}
const { HttpAgent } = require(path.join(modules, "@ag-ui/client"));
const { randomUUID } = require("node:crypto");

const url = process.argv[2];
let checks = 0;
function check(cond, what, detail) {
  if (!cond) {
    console.error(`FAILED: ${what}${detail === undefined ? "" : ": " + JSON.stringify(detail)}`);
    process.exit(1);
  }
  checks += 1;
  console.log(`ok: ${what}`);
}

async function run(agent, params) {
  const events = [];
  let finished = null;
  await agent.runAgent(params, {
    onEvent: ({ event }) => { events.push(event); },
    onRunFinishedEvent: (e) => { finished = e; },
  });
  return { events, types: events.map((e) => e.type), finished };
}

const text = (events) => events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e.delta).join("");
const user = (content) => ({ id: randomUUID(), role: "user", content });

async function toolRound() {
  const agent = new HttpAgent({ url, threadId: "node-tools-" + randomUUID() });
  agent.addMessage(user("What's the weather?"));
  const { events, types, finished } = await run(agent, {});
  check(types[0] === "RUN_STARTED" && types[types.length - 1] === "RUN_FINISHED", "a run opens with RUN_STARTED and closes with RUN_FINISHED", types);
  check(types.includes("REASONING_MESSAGE_CONTENT"), "thinking arrives as REASONING_* events", types);
  const call = events.find((e) => e.type === "TOOL_CALL_START");
  check(call && call.toolCallName === "get_weather", "the tool call is announced", call);
  const result = events.find((e) => e.type === "TOOL_CALL_RESULT");
  check(result && result.toolCallId === call.toolCallId && result.content === "sunny in Paris", "the tool's result follows its call", result);
  check(text(events) === "Result: sunny in Paris", "the answer streams as TEXT_MESSAGE_CONTENT", text(events));
  check(finished.outcome === "success", "the run succeeds", finished.outcome);
  const last = agent.messages[agent.messages.length - 1];
  check(last.role === "assistant" && last.content === "Result: sunny in Paris", "the client's conversation ends with the answer", last);

  agent.addMessage(user("hello"));
  const second = await run(agent, {});
  check(text(second.events) === "Hello!", "a follow-up on the same thread is answered (the whole history was sent)", text(second.events));
}

async function frontendRound() {
  const agent = new HttpAgent({ url, threadId: "node-frontend-" + randomUUID() });
  const tools = [{ name: "pick_color", description: "Let the user pick a color", parameters: { type: "object", properties: { palette: { type: "string" } } } }];
  agent.addMessage(user("a color please"));
  const first = await run(agent, { tools });
  const call = first.events.find((e) => e.type === "TOOL_CALL_START");
  check(call && call.toolCallName === "pick_color", "the model calls the front-end tool", call);
  check(!first.types.includes("TOOL_CALL_RESULT"), "the server does not run a front-end tool", first.types);
  check(first.finished.outcome === "success" && JSON.stringify(first.finished.pendingToolCallIds) === JSON.stringify([call.toolCallId]),
    "RUN_FINISHED leaves the call to the client (pendingToolCallIds)", first.finished.pendingToolCallIds);
  agent.addMessage({ id: randomUUID(), role: "tool", toolCallId: call.toolCallId, content: "orange" });
  const second = await run(agent, { tools });
  check(text(second.events) === "Result: orange", "the browser's result resumes the reply", text(second.events));
  const held = agent.messages.filter((m) => m.role === "tool" && m.toolCallId === call.toolCallId);
  check(held.length === 1 && held[0].content === "orange", "the client holds its own result once (not sent back)",
    agent.messages.map((m) => [m.role, m.toolCallId || "", m.content || ""]));
}

async function interruptRound() {
  const agent = new HttpAgent({ url, threadId: "node-interrupt-" + randomUUID() });
  agent.addMessage(user("delete it"));
  const first = await run(agent, {});
  check(first.finished.outcome === "interrupt", "a call needing confirmation ends the run as an interrupt", first.finished.outcome);
  const interrupts = agent.pendingInterrupts;
  check(interrupts.length === 1 && interrupts[0].reason === "tool_confirmation", "the client holds the pending interrupt", interrupts);
  let refused = null;
  try {
    await agent.runAgent({});
  } catch (e) {
    refused = e;
  }
  check(refused !== null, "the client refuses a run that leaves the interrupt unanswered");
  const second = await run(agent, { resume: [{ interruptId: interrupts[0].id, status: "resolved", payload: { approved: true } }] });
  const result = second.events.find((e) => e.type === "TOOL_CALL_RESULT");
  check(result && result.content === "deleted /tmp/a", "the approved call runs on resume", result);
  check(text(second.events) === "Result: deleted /tmp/a", "and the reply goes on", text(second.events));
  check(agent.pendingInterrupts.length === 0, "no interrupt is pending any more", agent.pendingInterrupts);
}

// The answer of a run is lost on the way: a new client (a reloaded page) holding only the
// question sends the same run again. The thread is replayed to it, and both clients end up
// holding the same conversation.
async function resentRound() {
  const threadId = "node-resent-" + randomUUID();
  const question = user("What's the weather?");
  const original = new HttpAgent({ url, threadId });
  original.addMessage({ ...question });
  await run(original, {});
  const reloaded = new HttpAgent({ url, threadId });
  reloaded.addMessage({ ...question });
  const again = await run(reloaded, {});
  check(again.finished.outcome === "success", "the run sent again succeeds", again.finished);
  check(text(again.events) === "Result: sunny in Paris", "its answer is sent again", text(again.events));
  const shape = (messages) => messages.map((m) => [m.role, m.content || "", (m.toolCalls || []).map((c) => c.id + " " + c.function.name + " " + c.function.arguments).join(), m.toolCallId || ""]);
  check(JSON.stringify(shape(reloaded.messages)) === JSON.stringify(shape(original.messages)),
    "the reloaded client holds the conversation the original client holds", [shape(reloaded.messages), shape(original.messages)]);
  check(reloaded.messages.filter((m) => m.role === "user").length === 1, "with the question once", reloaded.messages);
}

// A model call that breaks mid-answer and is retried: the events of the first attempt are
// ended before the restart's CUSTOM event, so the client accepts the run (it refuses a
// RUN_FINISHED while a message is open), and the answer is the retry's.
async function restartRound() {
  const agent = new HttpAgent({ url, threadId: "node-restart-" + randomUUID() });
  agent.addMessage(user("a flaky answer please"));
  const { events, types, finished } = await run(agent, {});
  check(finished && finished.outcome === "success", "a run whose model call was restarted finishes", types);
  const restart = events.find((e) => e.type === "CUSTOM" && e.name === "model_call_restart");
  check(restart !== undefined, "the restart is announced as a CUSTOM event", types);
  const started = events.filter((e) => e.type === "TEXT_MESSAGE_START").map((e) => e.messageId);
  const ended = events.filter((e) => e.type === "TEXT_MESSAGE_END").map((e) => e.messageId);
  check(JSON.stringify(started) === JSON.stringify(ended), "every text message started is ended", [started, ended]);
  check(text(events).endsWith("Recovered."), "the retry's answer follows", text(events));
}

(async () => {
  await restartRound();
  await toolRound();
  await frontendRound();
  await interruptRound();
  await resentRound();
  console.log(`${checks} passed, 0 failed`);
})().catch((e) => {
  console.error("FAILED:", e && e.stack ? e.stack : e);
  process.exit(1);
});

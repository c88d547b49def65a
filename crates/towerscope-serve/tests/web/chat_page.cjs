// Drives the chat page (GET /) in headless Chromium through playwright-core: a message with a
// tool round (thinking, the call, its result, the answer), a call confirmed with its button
// (once after its first answer failed to reach the server), a model call retried mid-answer,
// and a reply stopped with the stop button. Any JavaScript error on the page fails the run.
// argv: the page's URL, the screenshot's path.
"use strict";
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const modules = process.env.TOWERSCOPE_NODE_MODULES;
const executablePath = process.env.TOWERSCOPE_CHROMIUM || "/usr/bin/chromium";
if (!modules) {
  console.error("TOWERSCOPE_NODE_MODULES is not set (scripts/web-clients.sh prints it)");
  process.exit(2);
}
const { chromium } = require(path.join(modules, "playwright-core"));
const [url, screenshot] = process.argv.slice(2);

let checks = 0;
function check(cond, what, detail) {
  if (!cond) throw new Error(`${what}${detail === undefined ? "" : ": " + JSON.stringify(detail)}`);
  checks += 1;
  console.log(`ok: ${what}`);
}

(async () => {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "towerscope-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
           "--disable-component-update", "--disable-sync"],
    viewport: { width: 900, height: 900 },
  });
  const errors = [];
  const page = context.pages()[0] || await context.newPage();
  page.on("pageerror", (e) => errors.push("page error: " + e.message));
  page.on("console", (m) => { if (m.type() === "error") errors.push("console error: " + m.text()); });
  try {
    const response = await page.goto(url);
    check(response && response.status() === 200, "the page loads", response && response.status());

    await page.fill("#input", "What's the weather?");
    await page.click("#send");
    await page.waitForSelector(".assistant:has-text('Result: sunny in Paris')", { timeout: 10000 });
    check(true, "the streamed answer appears");
    const thinking = await page.textContent("details.reasoning");
    check(thinking.includes("I should look it up."), "the thinking is shown", thinking);
    const tool = await page.textContent(".tool");
    check(tool.includes("get_weather") && tool.includes("Paris") && tool.includes("sunny in Paris"),
      "the tool call shows its name, arguments and result", tool);

    await page.fill("#input", "please delete it");
    await page.click("#send");
    const approve = await page.waitForSelector("button[data-confirm]", { timeout: 10000 });
    check(true, "a call needing confirmation shows an Approve button");
    // The answer's request fails once (the connection drops), then is refused for want of a
    // token (401): the page asks again each time, and the third answer goes through.
    // Chromium logs the failed loads, which is expected here.
    await page.route("**/agui", (route) => route.abort("connectionreset"), { times: 1 });
    const before = errors.length;
    await approve.click();
    await page.waitForSelector(".error:has-text('connection failed')", { timeout: 10000 });
    const retry = await page.waitForSelector("button[data-confirm]", { timeout: 10000 });
    check(true, "after a failed answer the Approve button is shown again");
    await page.route("**/agui", (route) => route.fulfill({ status: 401, contentType: "application/json",
      body: JSON.stringify({ error: { code: "unauthorized", message: "send the token" } }) }), { times: 1 });
    await retry.click();
    await page.waitForSelector(".error:has-text('send the token')", { timeout: 10000 });
    errors.splice(before).filter((e) => !e.includes("ERR_CONNECTION_RESET") && !e.includes("status of 401"))
      .forEach((e) => errors.push(e));
    const again = await page.waitForSelector("button[data-confirm]", { timeout: 10000 });
    check(true, "after an answer refused for want of a token the Approve button is shown again");
    await again.click();
    await page.waitForSelector(".assistant:has-text('Result: deleted /tmp/a')", { timeout: 10000 });
    check(true, "the approved call ran and the reply went on");

    // A model call that breaks mid-answer is retried by the server: what its first attempt
    // showed (thinking, part of the text) is taken away, only the retried answer stays.
    const reasonings = await page.locator("details.reasoning").count();
    await page.fill("#input", "a flaky answer please");
    await page.click("#send");
    await page.waitForSelector(".assistant:has-text('Recovered.')", { timeout: 10000 });
    await page.waitForSelector("#send:not([disabled])", { timeout: 10000 });
    const partial = await page.locator(".assistant:has-text('A partial answer')").count();
    const thoughts = await page.locator("details.reasoning").count();
    check(partial === 0 && thoughts === reasonings, "a restarted model call's first attempt is taken off the page",
      { partial, reasonings: thoughts - reasonings });

    await page.fill("#input", "a long answer");
    await page.click("#send");
    await page.waitForSelector(".assistant:has-text('one two')", { timeout: 10000 });
    await page.click("#stop");
    await page.waitForSelector(".status:has-text('stopped')", { timeout: 10000 });
    const stopped = await page.locator(".assistant").last().textContent();
    check(!stopped.includes("twenty"), "the stop button stops the reply", stopped);
    await page.waitForSelector("#send:not([disabled])", { timeout: 10000 });

    // The stopped reply frees the thread once it has closed and saved (a few hundred ms on a
    // loaded machine): until then a message gets the server's 409, which the page shows and
    // Chromium logs as a failed resource load; the user sends again. Only those are expected.
    let answered = false;
    let busy = 0;
    for (let i = 0; i < 40 && !answered; i++) {
      const before = errors.length;
      await page.fill("#input", "hello");
      await page.click("#send");
      await page.waitForSelector("#send:not([disabled])", { timeout: 10000 });
      answered = (await page.locator(".assistant").last().textContent()) === "Hello!";
      const logged = errors.splice(before);
      const shown = logged.length === 1 && (await page.locator(".error").count()) > 0
        ? await page.locator(".error").last().textContent() : "";
      if (!answered && logged.length === 1 && logged[0].includes("status of 409") && shown.includes("already has a run in progress")) {
        busy += 1;
      } else {
        errors.push(...logged);
      }
      if (!answered) await page.waitForTimeout(100);
    }
    check(answered, "the conversation goes on after a stop", { busy });
    console.log(`(sent ${busy} time(s) to a thread still closing the stopped reply)`);

    // An answer the server refuses (409: the thread waits for nothing now, another tab answered)
    // is not asked again: the page shows why and takes messages.
    await page.fill("#input", "please delete it");
    await page.click("#send");
    const last = await page.waitForSelector("button[data-confirm]", { timeout: 10000 });
    await page.route("**/agui", (route) => route.fulfill({ status: 409, contentType: "application/json",
      body: JSON.stringify({ error: { code: "state_error", message: "nothing to resume" } }) }), { times: 1 });
    const beforeRefusal = errors.length;
    await last.click();
    await page.waitForSelector(".error:has-text('nothing to resume')", { timeout: 10000 });
    await page.waitForSelector("#send:not([disabled])", { timeout: 10000 });
    errors.splice(beforeRefusal).filter((e) => !e.includes("status of 409")).forEach((e) => errors.push(e));
    check(await page.locator("button[data-confirm]").count() === 0, "a refused answer is not asked again");

    await page.screenshot({ path: screenshot, fullPage: true });
    check(errors.length === 0, "no JavaScript error on the page", errors);
    console.log(`${checks} passed, 0 failed`);
  } finally {
    await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
})().catch((e) => {
  console.error("FAILED:", e && e.stack ? e.stack : e);
  process.exit(1);
});

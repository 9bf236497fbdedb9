// The validator's dashboard in a real browser (Debian's chromium, driven by
// playwright-core from tools/), against a real network: `crucible demo
// --keep` runs a chain, two miners, a copier and a validator; once it prints the
// dashboard's URL this test opens it on a desktop-sized and a phone-sized
// screen and checks what a person would see:
//   - the page loads with no console error and no failed request;
//   - the held-out loss chart has one point per window the validator
//     measured (read back from /v1/progress), the per-window charts a bar
//     per window and per rejection reason (/v1/windows), the miners table
//     a row and a link per scored uid;
//   - on a phone the page is no wider than the screen;
//   - a uid's link opens its page, whose score chart has a point per window
//     of the uid's history;
//   - it refreshes by itself (a later window appears without a reload).
// Screenshots go to ARTIFACTS (argv[4]). Then Ctrl-C: the demo exits 0 and
// no process of its folder is left.
//   node dashboard_test.mjs SOURCE_DIR BUILD_DIR [ARTIFACTS]
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import assert from "node:assert/strict";

const [source, build] = [process.argv[2], process.argv[3]];
const artifacts = process.argv[4] || path.join(build, "test-artifacts", "dashboard");
const require = createRequire(path.join(source, "tools", "package.json"));
const { chromium } = require("playwright-core");

const log = (...a) => console.log("dashboard-test:", ...a);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "crucible-dashboard-"));
fs.mkdirSync(artifacts, { recursive: true });

// Processes whose command line mentions `needle` (the demo's folder).
function processesMentioning(needle) {
  const out = [];
  for (const pid of fs.readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
      if (cmd.includes(needle) && Number(pid) !== process.pid) out.push(`${pid}: ${cmd.slice(0, 160)}`);
    } catch { /* gone */ }
  }
  return out;
}

const demo = spawn(path.join(build, "bin", "crucible"),
                   ["demo", "--dir", path.join(tmp, "demo"), "--out", path.join(tmp, "out"), "--windows", "3",
                    "--bad-miner", "copy", "--keep"],
                   { stdio: ["ignore", "pipe", "pipe"] });
let output = "";
demo.stdout.on("data", (d) => { output += d; });
demo.stderr.on("data", (d) => { output += d; });
const exited = new Promise((resolve) => demo.on("exit", (code, signal) => resolve({ code, signal })));

let browser = null;
let failed = false;
try {
  // 1. The demo says where its dashboard is once its windows are done.
  const started = Date.now();
  let url = null;
  while (!url) {
    const m = output.match(/dashboard: (http:\/\/127\.0\.0\.1:\d+)\//);
    if (m) url = m[1];
    else if (demo.exitCode !== null) throw new Error(`the demo exited before printing its dashboard:\n${output}`);
    else if (Date.now() - started > 400_000) throw new Error(`no dashboard URL in 400 s:\n${output}`);
    else await sleep(250);
  }
  log("dashboard at", url);
  const api = async (p) => (await fetch(url + p)).json();

  browser = await chromium.launch({ executablePath: "/usr/bin/chromium", chromiumSandbox: false,
                                    args: ["--disable-dev-shm-usage"] });
  const problems = [];
  const watch = (page) => {
    page.on("console", (m) => { if (m.type() === "error" || m.type() === "warning") problems.push(`console: ${m.text()}`); });
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    page.on("requestfailed", (r) => problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
    page.on("response", (r) => { if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`); });
  };

  // Windows drawn in a chart: the "window N" in each point's or bar's title.
  const drawnWindows = (page, selector) => page.$$eval(selector, (els) =>
    els.map((e) => Number((e.querySelector("title")?.textContent.match(/window (\d+)/) || [])[1])));

  // 2. The network, desktop-sized.
  const desktop = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  watch(desktop);
  await desktop.goto(url + "/");
  await desktop.waitForSelector("body[data-loaded=overview]", { timeout: 30_000 });
  const lossWindows = await drawnWindows(desktop, "#chart-loss circle.pt");
  const lastDrawn = Math.max(...lossWindows);
  const progress = (await api("/v1/progress")).windows.filter((p) => p.window <= lastDrawn && p.heldout_loss !== null);
  assert.ok(progress.length >= 3, `the validator measured ${progress.length} windows, the demo ran 3`);
  assert.deepEqual(lossWindows, progress.map((p) => p.window), "one loss point per window measured");
  const windows = (await api("/v1/windows")).windows.filter((w) => w.window <= lastDrawn);
  const bytesWindows = await drawnWindows(desktop, "#chart-bytes rect.bar");
  assert.deepEqual(bytesWindows, windows.filter((w) => w.bytes_received > 0).map((w) => w.window),
                   "one bytes bar per window that received any");
  assert.ok(bytesWindows.length >= 3, "bytes were received in the demo's windows");
  const drawnRejections = await desktop.$$eval("#chart-rejections rect.bar title", (ts) => ts.map((t) => t.textContent));
  const apiRejections = windows.flatMap((w) => Object.entries(w.rejections).map(([r, n]) => `window ${w.window} · ${r}: ${n}`));
  assert.deepEqual(drawnRejections.sort(), apiRejections.sort(), "a bar per window and rejection reason");
  assert.ok(apiRejections.length >= 1, "the copier was rejected");
  const uids = (await api("/v1/scores")).uids;
  const links = await desktop.$$eval("a.uid", (as) => as.map((a) => a.getAttribute("href")));
  assert.equal(links.length, uids.length, "a row and a link per scored uid");
  assert.ok(uids.length >= 2, "the demo's two miners are scored");
  await desktop.screenshot({ path: path.join(artifacts, "dashboard.png"), fullPage: true });

  // 3. A uid's page, through its link.
  const paid = uids.filter((u) => u.weight > 0).sort((a, b) => a.uid - b.uid)[0] || uids[0];
  await desktop.click(`a.uid[href="/uid/${paid.uid}"]`);
  await desktop.waitForURL(`${url}/uid/${paid.uid}`);
  await desktop.waitForSelector("body[data-loaded=uid]", { timeout: 30_000 });
  assert.equal((await desktop.textContent("h1")).trim(), `uid ${paid.uid}`);
  const finalWindows = await drawnWindows(desktop, "#chart-final circle.pt");
  const history = (await api(`/v1/miners/${paid.uid}`)).history
    .filter((r) => r.window <= Math.max(...finalWindows));
  assert.ok(history.length >= 1, "the uid has a history");
  assert.deepEqual(finalWindows, history.map((r) => r.window), "one score point per window of the uid's history");
  const rows = await desktop.$$eval("section.panel table tbody tr", (trs) => trs.length);
  assert.ok(rows >= history.length, "a table row per window judged");
  // The hotkey as the CLI shows it (SS58), its full text on hover.
  const hotkeyTitle = await desktop.$$eval(".card", (cs) =>
    cs.filter((c) => c.querySelector(".label").textContent === "hotkey").map((c) => c.getAttribute("title"))[0]);
  const paidScore = uids.find((u) => u.uid === paid.uid);
  assert.equal(hotkeyTitle, paidScore.hotkey_ss58, "the hotkey card shows the SS58 form");
  assert.match(hotkeyTitle, /^5[1-9A-HJ-NP-Za-km-z]{47}$/);
  await desktop.screenshot({ path: path.join(artifacts, "dashboard-uid.png"), fullPage: true });

  // 4. A phone: the same page, no wider than the screen.
  const phone = await browser.newPage({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true });
  watch(phone);
  await phone.goto(url + "/");
  await phone.waitForSelector("body[data-loaded=overview]", { timeout: 30_000 });
  const [scrollWidth, innerWidth] = await phone.evaluate(() => [document.documentElement.scrollWidth, innerWidth]);
  assert.ok(scrollWidth <= innerWidth, `on a phone the page is ${scrollWidth}px wide on a ${innerWidth}px screen`);
  assert.ok((await phone.$$("#chart-loss circle.pt")).length >= 3, "the loss chart is drawn on a phone");
  await phone.screenshot({ path: path.join(artifacts, "dashboard-phone.png"), fullPage: true });

  // 5. It refreshes by itself: a window later than any drawn shows up.
  const before = Math.max(...(await drawnWindows(desktop, "#chart-final circle.pt")));
  await desktop.goto(url + "/");
  await desktop.waitForSelector("body[data-loaded=overview]");
  const first = Math.max(...(await drawnWindows(desktop, "#chart-loss circle.pt")));
  await desktop.waitForFunction((w) => [...document.querySelectorAll("#chart-loss circle.pt title")]
    .some((t) => Number((t.textContent.match(/window (\d+)/) || [])[1]) > w), first, { timeout: 90_000 });
  log(`refreshed: loss drawn to window ${first}, then later (uid chart was at ${before})`);

  assert.deepEqual(problems, [], "no console errors, failed requests or error answers");
  log("ok");
} catch (e) {
  failed = true;
  console.error("dashboard-test: FAILED:", e.stack || e);
  console.error("demo output:\n" + output.slice(-4000));
} finally {
  if (browser) await browser.close();
  demo.kill("SIGINT");
  const end = await Promise.race([exited, sleep(120_000).then(() => null)]);
  if (!end || end.code !== 0) {
    failed = true;
    console.error(`dashboard-test: FAILED: the demo did not exit 0 on Ctrl-C (${JSON.stringify(end)})`);
    if (!end) demo.kill("SIGKILL");
  }
  await sleep(500);
  const left = processesMentioning(tmp);
  if (left.length) {
    failed = true;
    console.error("dashboard-test: FAILED: left running:\n" + left.join("\n"));
    for (const l of left) try { process.kill(Number(l.split(":")[0]), "SIGKILL"); } catch { /* gone */ }
  }
  fs.rmSync(tmp, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);

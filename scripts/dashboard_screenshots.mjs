// Screenshots of a running validator's dashboard, as in docs/dashboard.md:
//   node scripts/dashboard_screenshots.mjs http://127.0.0.1:PORT OUT_DIR [UID]
// (the address `crucible demo --keep` prints). Uses Debian's chromium and
// playwright-core from tools/ (scripts/setup.sh installs both).
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const { chromium } = createRequire(path.join(root, "tools", "package.json"))("playwright-core");
const [url, out, uid = "1"] = process.argv.slice(2);
if (!url || !out) {
  console.error("usage: node scripts/dashboard_screenshots.mjs URL OUT_DIR [UID]");
  process.exit(2);
}
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", chromiumSandbox: false });
try {
  const shots = [["dashboard.png", "/", { width: 1280, height: 900 }, "overview"],
                 ["dashboard-uid.png", `/uid/${uid}`, { width: 1280, height: 900 }, "uid"],
                 ["dashboard-phone.png", "/", { width: 390, height: 844 }, "overview"]];
  for (const [file, page, viewport, loaded] of shots) {
    const p = await browser.newPage({ viewport, deviceScaleFactor: viewport.width < 600 ? 2 : 1 });
    await p.goto(url + page);
    await p.waitForSelector(`body[data-loaded=${loaded}]`, { timeout: 30_000 });
    await p.screenshot({ path: path.join(out, file), fullPage: true });
    console.log("wrote", path.join(out, file));
  }
} finally {
  await browser.close();
}

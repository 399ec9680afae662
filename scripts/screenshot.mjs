// screenshot: renders a local page (an --explore page, a run plot SVG, a heads
// report) in headless Chromium and saves a PNG; the README's pictures come from
// it. No network: the page is opened from a file.
//   node scripts/screenshot.mjs PAGE OUT.png [--size 1200x900] [--hover I] [--full]
// --hover I moves the mouse over token I of an explorer page (of the first
// model's text on a compare page) first and pins it, so the shot shows where
// that token looks. --full captures the whole page.
import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { Browser, findChromium } from "../tests/browser/cdp.mjs";

function usage(msg) {
  if (msg) console.error(`screenshot: ${msg}`);
  console.error("usage: node scripts/screenshot.mjs PAGE OUT.png [--size WxH] [--hover I] [--full]");
  process.exit(2);
}

const args = process.argv.slice(2);
const pos = [];
let size = "1200x900", hover = null, full = false;
for (let k = 0; k < args.length; k++) {
  if (args[k] === "--size") size = args[++k];
  else if (args[k] === "--hover") hover = args[++k];
  else if (args[k] === "--full") full = true;
  else pos.push(args[k]);
}
if (pos.length !== 2) usage();
const m = /^(\d+)x(\d+)$/.exec(size || "");
if (!m) usage(`--size must look like 1200x900, got '${size}'`);
if (hover !== null && !/^\d+$/.test(hover)) usage(`--hover takes a token index, got '${hover}'`);
const chromium = findChromium();
if (!chromium) {
  console.error("screenshot: chromium not found (apt-get install -y chromium, or set CHROMIUM)");
  process.exit(1);
}

const b = await Browser.launch(chromium, +m[1], +m[2]);
try {
  await b.send("Page.enable");
  await b.navigate(pathToFileURL(resolve(pos[0])).href);
  if (await b.eval(`!!document.getElementById("models")`)) {
    // A compare page: --hover I picks token I of the first model's text.
    await b.until("document.body.dataset.ready === '1'");
    if (hover !== null) {
      await b.click(`.model[data-m="0"] .tok[data-i="${hover}"]`);
      await b.eval("window.scrollTo(0, 0)");
    }
  } else if (await b.eval(`!!document.getElementById("tokens")`)) {
    await b.until("document.body.dataset.ready === '1' && document.body.dataset.mapsDrawn === '1'");
    if (hover !== null) {
      await b.click(`#tokens .tok[data-i="${hover}"]`);
      await b.eval("window.scrollTo(0, 0)");
    }
  }
  writeFileSync(pos[1], await b.screenshot(full));
  console.log(pos[1]);
} finally {
  await b.close();
}

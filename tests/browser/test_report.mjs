// test_report: loads a heads report page (./infer --heads --report DIR) in headless
// Chromium at 1280 x 900 and checks that it fits the window: no table, the Metrics
// table above all, runs past the page's right edge, and nothing scrolls sideways.
//   node tests/browser/test_report.mjs DIR/index.html
import { Browser, findChromium, openWatched } from "./cdp.mjs";

async function main() {
  const [page] = process.argv.slice(2);
  if (!page) {
    console.error("usage: node tests/browser/test_report.mjs DIR/index.html");
    process.exit(2);
  }
  const chromium = findChromium();
  if (!chromium) {
    console.error("chromium not found (apt-get install -y chromium, or set CHROMIUM)");
    process.exit(1);
  }
  const b = await Browser.launch(chromium);
  let failures = 0;
  try {
    await openWatched(b, page, "document.readyState === 'complete'");
    const got = await b.eval(`(() => {
      const inner = window.innerWidth, body = document.body.getBoundingClientRect();
      return {inner, doc: document.documentElement.scrollWidth,
        tables: [...document.querySelectorAll("table")].map((t) => ({
          title: t.previousElementSibling ? t.previousElementSibling.textContent : "",
          right: Math.round(t.getBoundingClientRect().right), edge: Math.round(body.right)}))};
    })()`);
    if (!got.tables.some((t) => t.title === "Metrics")) {
      console.error(`FAIL: ${page}: no Metrics table`);
      failures++;
    }
    for (const t of got.tables)
      if (t.right > t.edge + 1) {
        console.error(`FAIL: ${page}: the ${t.title} table ends at ${t.right} px, past the page's ${t.edge}`);
        failures++;
      }
    if (got.doc > got.inner) {
      console.error(`FAIL: ${page}: ${got.doc} px wide in a ${got.inner} px window`);
      failures++;
    }
    console.log(`${page}: ${got.tables.length} tables within ${got.inner} px`);
  } finally {
    await b.close();
  }
  if (failures) process.exit(1);
  console.log("report browser test: all checks passed");
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

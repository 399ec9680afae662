// test_gold: loads the explorer page of a treebank sentence (./infer --explore
// --text-file FILE.conllu) in headless Chromium and checks its gold-dependency
// view against the same run's --explore-json: a row per dependency and per
// relation, and clicking each dependency (a real mouse click) outlines its
// query token and key tokens, pins the query, shows its best head's layer and
// lists every head's attention on the key, largest first, as the JSON has it;
// no console error, no request beyond the page.
//   node tests/browser/test_gold.mjs PAGE.html PAGE.json
import { readFileSync } from "node:fs";
import { Browser, findChromium, openWatched } from "./cdp.mjs";

async function main() {
  const [page, json] = process.argv.slice(2);
  if (!page || !json) {
    console.error("usage: node tests/browser/test_gold.mjs PAGE.html PAGE.json");
    process.exit(2);
  }
  const chromium = findChromium();
  if (!chromium) {
    console.error("chromium not found (apt-get install -y chromium, or set CHROMIUM)");
    process.exit(1);
  }
  const J = JSON.parse(readFileSync(json, "utf8")), G = J.gold, H = J.H;
  let failures = 0;
  const check = (ok, what) => {
    if (!ok) {
      console.error(`FAIL: ${page}: ${what}`);
      failures++;
    }
  };
  check(G && G.pairs.length > 0, "the JSON has no gold pairs");
  const b = await Browser.launch(chromium);
  try {
    const p = await openWatched(b, page, "document.body.dataset.gold === '1'");
    const rows = await b.eval(`[document.querySelectorAll("#goldpairs tbody tr").length,
      document.querySelectorAll("#goldrelations tbody tr").length]`);
    check(rows[0] === G.pairs.length, `${rows[0]} dependency rows, the JSON has ${G.pairs.length}`);
    check(rows[1] === G.relations.length,
      `${rows[1]} relation rows, the JSON has ${G.relations.length}`);
    for (let n = 0; n < G.pairs.length; n++) {
      const x = G.pairs[n];
      await b.click(`#goldpairs tbody tr:nth-child(${n + 1}) td`);
      const got = await b.eval(`(() => {
        const t = [...document.querySelectorAll("#tokens .tok")];
        const idx = (c) => t.flatMap((s, i) => s.classList.contains(c) ? [i] : []);
        return {gq: idx("gq"), gk: idx("gk"), pinned: idx("pinned"),
                layer: document.getElementById("layer").value,
                detail: document.getElementById("golddetail").textContent};
      })()`);
      const keys = [];
      for (let j = x.key[0]; j <= x.key[1]; j++) keys.push(j);
      const what = `${x.relation} ${x.dependent} -> ${x.head}`;
      check(JSON.stringify(got.gq) === JSON.stringify([x.query]), `${what}: query ${got.gq}`);
      check(JSON.stringify(got.gk) === JSON.stringify(keys), `${what}: keys ${got.gk}`);
      check(JSON.stringify(got.pinned) === JSON.stringify([x.query]),
        `${what}: pinned ${got.pinned}`);
      check(got.layer === x.best_head.replace(/^L(\d+)H\d+$/, "$1"),
        `${what}: layer ${got.layer}, best head ${x.best_head}`);
      const order = x.attention.map((a, k) => [a, k]).sort((u, v) => v[0] - u[0] || u[1] - v[1]);
      const want = order.map(([a, k]) => `L${Math.floor(k / H)}H${k % H} ${a.toFixed(3)}`)
        .join(", ");
      check(got.detail.includes(want), `${what}: detail "${got.detail}", expected "${want}"`);
      // The view scrolls smoothly to the head view: let it settle before the next click.
      // (the same scroll position for a quarter of a second).
      for (let y = -1, same = 0, k = 0; k < 200 && same < 5; k++) {
        await new Promise((r) => setTimeout(r, 50));
        const now = await b.eval("window.scrollY");
        same = now === y ? same + 1 : 0;
        y = now;
      }
    }
    for (const pr of p.problems) check(false, pr);
    const others = p.requests.filter((u) => u !== p.url);
    check(others.length === 0, `requests beyond the page itself: ${others.join(", ")}`);
  } finally {
    await b.close();
  }
  if (failures) process.exit(1);
  console.log(`${page}: ${G.pairs.length} gold dependencies agree with the JSON`);
  console.log("gold browser test: all checks passed");
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

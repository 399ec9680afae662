// test_explore: loads an --explore page in headless Chromium and checks it
// against the full-precision weights ./infer wrote with --explore-json:
//   node tests/browser/test_explore.mjs PAGE.html WEIGHTS.json [PAGE2.html ...]
// For each page: every token shows its piece's label; hovering a token shades
// exactly the keys it can see, each with the largest selected head's weight;
// the per-head top keys are the right keys with the right weights; switching
// the layer and toggling a head change both accordingly; a map of the model view
// opens large; and the page logged no error and made no request beyond loading
// itself. Extra pages (no JSON) are
// only loaded, hovered and timed (the full-size model). Exits 1 on a failure.
import { readFileSync } from "node:fs";
import { Browser, findChromium, openWatched } from "./cdp.mjs";

// A shown weight is round(255 w) / 255 printed with 3 decimals.
const TOL = 0.5 / 255 + 0.0005 + 1e-6;
let failures = 0;
function check(ok, what) {
  if (!ok) {
    failures++;
    console.error(`FAIL: ${what}`);
  }
}

// The explorer is ready once it has drawn every map of the model view.
const openPage = (b, file) => openWatched(b, file,
  "document.body && document.body.dataset.ready === '1' && document.body.dataset.mapsDrawn === '1'");

// What the page shows for the current query: every token's shading and the
// top-keys table.
function readShown(b) {
  return b.eval(`(() => ({
    shade: [...document.querySelectorAll("#tokens .tok")].map((s) =>
      s.dataset.w === undefined ? null : {w: +s.dataset.w, head: +s.dataset.head}),
    top: [...document.querySelectorAll("#topkeys tr")].map((tr) => ({head: +tr.dataset.head,
      keys: [...tr.querySelectorAll(".k")].map((k) => ({j: +k.dataset.j, w: +k.dataset.w}))})),
  }))()`);
}

// Checks the shown numbers for query i of layer l with heads `on` selected.
function checkShown(shown, A, l, i, on, label) {
  const T = A[0][0].length;
  for (let j = 0; j < T; j++) {
    const s = shown.shade[j];
    if (j > i) {
      check(s === null, `${label}: key ${j} after query ${i} is shaded`);
      continue;
    }
    let best = 0;
    for (const h of on) best = Math.max(best, A[l][h][i][j]);
    if (best * 255 < 0.5) {   // rounds to 0: the page leaves it unshaded
      check(s === null || s.w === 0, `${label}: key ${j} shaded for a zero weight`);
      continue;
    }
    check(s !== null, `${label}: key ${j} (weight ${best.toFixed(4)}) is not shaded`);
    if (!s) continue;
    check(Math.abs(s.w - best) <= TOL, `${label}: key ${j} shows ${s.w}, largest weight is ${best}`);
    check(on.includes(s.head), `${label}: key ${j} shaded by head ${s.head}, which is off`);
    if (on.includes(s.head))
      check(Math.abs(A[l][s.head][i][j] - best) <= 2 * TOL,
            `${label}: key ${j} coloured for head ${s.head}, not the strongest`);
  }
  check(shown.top.length === on.length,
        `${label}: ${shown.top.length} rows of top keys for ${on.length} heads`);
  for (const row of shown.top) {
    check(on.includes(row.head), `${label}: top keys for head ${row.head}, which is off`);
    const w = A[l][row.head][i];
    const sorted = [...w].sort((x, y) => y - x);
    check(row.keys.length === Math.min(5, i + 1), `${label}: head ${row.head} lists ${row.keys.length} keys`);
    row.keys.forEach((k, r) => {
      check(k.j <= i, `${label}: head ${row.head} lists future key ${k.j}`);
      check(Math.abs(k.w - w[k.j]) <= TOL, `${label}: head ${row.head} key ${k.j} shows ${k.w}, weight ${w[k.j]}`);
      check(Math.abs(w[k.j] - sorted[r]) <= 2 * TOL,
            `${label}: head ${row.head} rank ${r} is key ${k.j} (${w[k.j]}), the rank-${r} weight is ${sorted[r]}`);
    });
  }
}

async function selectLayer(b, l) {
  // A <select> has no mouse path in headless Chromium: focus it and choose the
  // option with the keyboard, as a user can.
  await b.eval(`document.getElementById("layer").focus()`);
  const cur = await b.eval(`+document.getElementById("layer").value`);
  for (let k = cur; k < l; k++) {
    await b.send("Input.dispatchKeyEvent", { type: "keyDown", key: "ArrowDown", code: "ArrowDown", windowsVirtualKeyCode: 40 });
    await b.send("Input.dispatchKeyEvent", { type: "keyUp", key: "ArrowDown", code: "ArrowDown", windowsVirtualKeyCode: 40 });
  }
  await b.until(`+document.getElementById("layer").value === ${l}`, 5000);
}

async function testWithWeights(b, file, jsonFile) {
  const J = JSON.parse(readFileSync(jsonFile, "utf8"));
  const A = J.attention, L = J.L, H = J.H, T = J.T;
  const page = await openPage(b, file);
  const all = [...Array(H).keys()];
  const info = await b.eval(`({T: document.querySelectorAll("#tokens .tok").length,
    cells: document.querySelectorAll("#grid .cell").length, layers: document.getElementById("layer").options.length})`);
  check(info.T === T, `the page shows ${info.T} tokens, infer wrote ${T}`);
  check(info.cells === L * H, `the model view has ${info.cells} maps for ${L * H} heads`);
  check(info.layers === L, `the layer selector has ${info.layers} layers for ${L}`);
  // Each token shows its label, as --explore-json writes it (a byte-pair token is
  // its whole text, e.g. "\u2423went").
  const shownText = await b.eval(`[...document.querySelectorAll("#tokens .tok")].map((s) => s.textContent)`);
  check(JSON.stringify(shownText) === JSON.stringify(J.pieces),
        `the tokens read ${JSON.stringify(shownText.slice(0, 8))}..., the pieces ${JSON.stringify(J.pieces.slice(0, 8))}...`);

  for (const i of [T - 1, Math.floor(T / 2), 0]) {
    await b.hover(`#tokens .tok[data-i="${i}"]`);
    await b.until(`document.querySelector('#tokens .tok[data-i="${i}"]').classList.contains("q")`, 5000);
    checkShown(await readShown(b), A, 0, i, all, `layer 0, query ${i}`);
  }
  if (L > 1) {
    const i = T - 2;
    await b.click(`#tokens .tok[data-i="${i}"]`);        // pin it, so the mouse may move away
    await selectLayer(b, L - 1);
    checkShown(await readShown(b), A, L - 1, i, all, `layer ${L - 1}, pinned query ${i}`);
    if (H > 1) {
      await b.click(`#headbtns button[data-head="0"]`);   // head 0 off
      checkShown(await readShown(b), A, L - 1, i, all.slice(1), `layer ${L - 1} without head 0`);
      await b.click(`#headbtns button[data-head="0"]`);
    }
  }
  await checkRelationView(b, J);
  await b.click(`#grid .cell[data-k="${L * H - 1}"]`);
  const modal = await b.eval(`({hidden: document.getElementById("modal").hidden,
    w: document.getElementById("big").width, title: document.getElementById("bigtitle").textContent})`);
  check(!modal.hidden && modal.w > 100, `clicking a map did not open it large: ${JSON.stringify(modal)}`);
  check(modal.title.startsWith(`L${L - 1}H${H - 1}`), `the large map is titled '${modal.title}'`);
  await b.send("Input.dispatchKeyEvent", { type: "keyDown", key: "Escape", code: "Escape", windowsVirtualKeyCode: 27 });
  await b.until(`document.getElementById("modal").hidden`, 5000);
  finish(page, file);
}

// The relation view: for each relation --explore-json gives keys for, picking it
// underlines exactly the queries with a key, and hovering such a query marks
// exactly its keys; the relations without keys on this text are not offered.
async function checkRelationView(b, J) {
  const names = Object.keys(J.relation_keys).filter((n) => J.relation_keys[n]);
  const offered = await b.eval(`[...document.getElementById("relation").options].map((o) => o.value)`);
  check(JSON.stringify(offered) === JSON.stringify([""].concat(names)),
        `the relation selector offers ${JSON.stringify(offered)}, the JSON has keys for ${JSON.stringify(names)}`);
  await b.click(`#tokens .tok[data-i="0"]`);   // unpin whatever is pinned: hover drives the query
  await b.click(`#tokens .tok[data-i="0"]`);
  let marked = 0;
  for (const n of names) {
    const keys = J.relation_keys[n];
    await b.eval(`(() => { const s = document.getElementById("relation"); s.value = ${JSON.stringify(n)};
      s.dispatchEvent(new Event("change")); })()`);
    const rq = await b.eval(`[...document.querySelectorAll("#tokens .tok.rq")].map((s) => +s.dataset.i)`);
    const want = keys.map((k, i) => (k.length ? i : -1)).filter((i) => i >= 0);
    check(JSON.stringify(rq) === JSON.stringify(want), `${n}: underlined queries ${JSON.stringify(rq)}, want ${JSON.stringify(want)}`);
    for (const i of want.slice(-3)) {
      await b.hover(`#tokens .tok[data-i="${i}"]`);
      await b.until(`document.querySelector('#tokens .tok[data-i="${i}"]').classList.contains("q")`, 5000);
      const rk = await b.eval(`[...document.querySelectorAll("#tokens .tok.rk")].map((s) => +s.dataset.i)`);
      check(JSON.stringify(rk) === JSON.stringify(keys[i]), `${n}, query ${i}: marked keys ${JSON.stringify(rk)}, want ${JSON.stringify(keys[i])}`);
      marked += rk.length;
    }
  }
  check(marked > 0, "the relation view marked no key at all");
  await b.eval(`(() => { const s = document.getElementById("relation"); s.value = "";
    s.dispatchEvent(new Event("change")); })()`);
}

function finish(page, file) {
  for (const p of page.problems) check(false, `${file}: ${p}`);
  const others = page.requests.filter((u) => u !== page.url);
  check(others.length === 0, `${file}: requests beyond the page itself: ${others.join(", ")}`);
  console.log(`${file}: loaded and drew every map in ${page.loadMs} ms`);
}

// A page without weights to compare: load, hover along the text and time it.
async function testLoadOnly(b, file) {
  const page = await openPage(b, file);
  const T = await b.eval(`document.querySelectorAll("#tokens .tok").length`);
  const t0 = Date.now();
  const n = 20;
  for (let k = 0; k < n; k++) {
    const i = Math.floor((k + 1) * (T - 1) / n);
    await b.hover(`#tokens .tok[data-i="${i}"]`);
    await b.until(`document.querySelector('#tokens .tok[data-i="${i}"]').classList.contains("q")`, 5000);
  }
  const hoverMs = (Date.now() - t0) / n;
  const shaded = await b.eval(`document.querySelectorAll("#tokens .tok[data-w]").length`);
  check(shaded > 0, `${file}: hovering shaded nothing`);
  await b.click(`#grid .cell[data-k="0"]`);
  check(!(await b.eval(`document.getElementById("modal").hidden`)), `${file}: the large map did not open`);
  console.log(`${file}: ${T} tokens, ${hoverMs.toFixed(1)} ms per hover (mean of ${n}, with the test's own round trips)`);
  finish(page, file);
}

async function main() {
  const [page, json, ...more] = process.argv.slice(2);
  if (!page || !json) {
    console.error("usage: node tests/browser/test_explore.mjs PAGE.html WEIGHTS.json [PAGE2.html ...]");
    process.exit(2);
  }
  const chromium = findChromium();
  if (!chromium) {
    console.error("chromium not found (apt-get install -y chromium, or set CHROMIUM)");
    process.exit(1);
  }
  for (const [f, run] of [[page, (b) => testWithWeights(b, page, json)],
                          ...more.map((m) => [m, (b) => testLoadOnly(b, m)])]) {
    const b = await Browser.launch(chromium);
    try {
      await run(b);
    } catch (e) {
      check(false, `${f}: ${e.message}`);
    } finally {
      await b.close();
    }
  }
  if (failures) {
    console.error(`${failures} check(s) failed`);
    process.exit(1);
  }
  console.log("browser test: all checks passed");
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

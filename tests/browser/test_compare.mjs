// test_compare: loads a compare page (./infer --explore with several --ckpt) in
// headless Chromium and checks it against each model's full-precision weights,
// written by ./infer --explore-json from that checkpoint alone on the same text:
//   node tests/browser/test_compare.mjs PAGE.html WEIGHTS1.json WEIGHTS2.json ...
// (the weights in the page's model order). Every model shows its own tokens;
// hovering a token in any model makes, in every model, the token holding the
// hovered token's last byte the query, and every head of every model shows the
// key it weights most for that query with its weight; a pinned query stays; a
// chip shows its head alone; the relation view marks each model's ground truth
// and its heads' roles; and the page logged no error and made no request beyond
// loading itself. Exits 1 on a failure.
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

// Model J's byte span [b0, b1) of each token and the token holding byte b.
function spans(J) {
  const b0 = [], b1 = [];
  let at = 0;
  for (const t of J.tokens) {
    b0.push(at);
    at += Array.isArray(t) ? t.length : 1;
    b1.push(at);
  }
  return { b0, b1, holding: (b) => b0.findIndex((s, t) => s <= b && b < b1[t]) };
}

// What model m's box shows: its query token, the shading and every head's chip.
function readModel(b, m) {
  return b.eval(`(() => { const s = document.querySelector('.model[data-m="${m}"]');
    return {q: [...s.querySelectorAll(".tok.q")].map((t) => +t.dataset.i),
      shade: [...s.querySelectorAll(".tok")].map((t) => t.dataset.w === undefined ? null : +t.dataset.w),
      chips: [...s.querySelectorAll(".chip")].map((c) => ({k: +c.dataset.k,
        j: c.dataset.j === undefined ? -1 : +c.dataset.j, w: c.dataset.w === undefined ? null : +c.dataset.w,
        off: c.classList.contains("off"), serves: c.classList.contains("serves")}))}; })()`);
}

// Head k's weights of query i in weights J.
const row = (J, k, i) => J.attention[Math.floor(k / J.H)][k % J.H][i];

// Checks every model's box for the byte `byte` picked; heads `only[m]` (-1: all).
async function checkQuery(b, Js, byte, label, only = []) {
  for (let m = 0; m < Js.length; m++) {
    const J = Js[m], want = spans(J).holding(byte), shown = await readModel(b, m);
    check(JSON.stringify(shown.q) === JSON.stringify(want < 0 ? [] : [want]),
          `${label}, model ${m}: query ${JSON.stringify(shown.q)}, the token holding byte ${byte} is ${want}`);
    check(shown.chips.length === J.L * J.H, `model ${m}: ${shown.chips.length} chips for ${J.L * J.H} heads`);
    let responded = 0;
    for (const c of shown.chips) {
      if (want < 0) { check(c.j === -1, `${label}, model ${m}: head ${c.k} shows a key without a query`); continue; }
      const w = row(J, c.k, want), best = Math.max(...w);
      check(c.j >= 0 && c.j <= want, `${label}, model ${m}, head ${c.k}: top key ${c.j} for query ${want}`);
      if (c.j < 0) continue;
      check(Math.abs(c.w - w[c.j]) <= TOL, `${label}, model ${m}, head ${c.k}: key ${c.j} shows ${c.w}, weight ${w[c.j]}`);
      check(w[c.j] >= best - 2 * TOL, `${label}, model ${m}, head ${c.k}: key ${c.j} (${w[c.j]}) is not the largest (${best})`);
      check(c.off === (only[m] !== undefined && only[m] >= 0 && only[m] !== c.k),
            `${label}, model ${m}, head ${c.k}: shown ${c.off ? "off" : "on"}`);
      responded++;
    }
    if (want >= 0)
      check(responded === J.L * J.H, `${label}, model ${m}: ${responded} of ${J.L * J.H} heads responded`);
    // A key's shade is the largest weight any head that is on gives it.
    for (let j = 0; want >= 0 && j < J.T; j++) {
      let best = 0;
      for (let k = 0; k < J.L * J.H && j <= want; k++)
        if (only[m] === undefined || only[m] < 0 || only[m] === k) best = Math.max(best, row(J, k, want)[j]);
      const s = shown.shade[j];
      if (best * 255 < 0.5) check(s === null || s === 0, `${label}, model ${m}: key ${j} shaded for a zero weight`);
      else check(s !== null && Math.abs(s - best) <= TOL, `${label}, model ${m}: key ${j} shows ${s}, largest weight ${best}`);
    }
  }
}

async function hoverIn(b, m, i) {
  await b.hover(`.model[data-m="${m}"] .tok[data-i="${i}"]`);
  await b.until(`document.querySelector('.model[data-m="${m}"] .tok[data-i="${i}"]').classList.contains("q")`, 5000);
}

async function pickRelation(b, name) {
  await b.eval(`(() => { const s = document.getElementById("relation"); s.value = ${JSON.stringify(name)};
    s.dispatchEvent(new Event("change")); })()`);
}

// The relation view: every relation some model has keys for is offered; picking
// one underlines exactly each model's queries with a key, marks the hovered
// query's keys, and outlines exactly the heads that serve it.
async function checkRelations(b, Js) {
  const names = [];
  for (const J of Js)
    for (const [n, v] of Object.entries(J.relation_keys)) if (v && !names.includes(n)) names.push(n);
  const offered = await b.eval(`[...document.getElementById("relation").options].map((o) => o.value)`);
  check(JSON.stringify(offered) === JSON.stringify([""].concat(names)),
        `the relation selector offers ${JSON.stringify(offered)}, the weights have keys for ${JSON.stringify(names)}`);
  let marked = 0, serving = 0;
  for (const n of names) {
    await pickRelation(b, n);
    const q = Js[0].T - 1;
    await hoverIn(b, 0, q);
    const byte = spans(Js[0]).b1[q] - 1;
    for (let m = 0; m < Js.length; m++) {
      const J = Js[m], keys = J.relation_keys[n], i = spans(J).holding(byte);
      const got = await b.eval(`(() => { const s = document.querySelector('.model[data-m="${m}"]');
        return {rq: [...s.querySelectorAll(".tok.rq")].map((t) => +t.dataset.i),
          rk: [...s.querySelectorAll(".tok.rk")].map((t) => +t.dataset.i),
          roles: [...s.querySelectorAll(".chip")].map((c) => ["serves", "attends", "needed"]
            .filter((r) => c.classList.contains(r)).join("")),
          text: s.querySelector(".serving").textContent}; })()`);
      const rq = keys ? keys.map((k, t) => (k.length ? t : -1)).filter((t) => t >= 0) : [];
      check(JSON.stringify(got.rq) === JSON.stringify(rq), `${n}, model ${m}: underlined ${JSON.stringify(got.rq)}, want ${JSON.stringify(rq)}`);
      const rk = keys && i >= 0 ? keys[i] : [];
      check(JSON.stringify(got.rk) === JSON.stringify(rk), `${n}, model ${m}, query ${i}: marked keys ${JSON.stringify(got.rk)}, want ${JSON.stringify(rk)}`);
      // A head's outline: serves (attends and needed), attends alone, needed alone.
      const roles = J.heads.map((h) => h.serves.includes(n) ? "serves"
        : h.attends.includes(n) && !h.needed.includes(n) ? "attends"
        : h.needed.includes(n) && !h.attends.includes(n) ? "needed" : "");
      check(JSON.stringify(got.roles) === JSON.stringify(roles), `${n}, model ${m}: head outlines ${JSON.stringify(got.roles)}, want ${JSON.stringify(roles)}`);
      check(got.text.startsWith(n + ": "), `${n}, model ${m}: the relation line reads '${got.text}'`);
      marked += rk.length;
      serving += roles.filter((r) => r).length;
    }
  }
  check(marked > 0, "the relation view marked no key in any model");
  console.log(`relation view: ${names.length} relations, ${marked} keys marked, ${serving} heads outlined`);
  await pickRelation(b, "");
}

async function main() {
  const [page, ...jsons] = process.argv.slice(2);
  if (!page || jsons.length < 2) {
    console.error("usage: node tests/browser/test_compare.mjs PAGE.html WEIGHTS1.json WEIGHTS2.json ...");
    process.exit(2);
  }
  const chromium = findChromium();
  if (!chromium) {
    console.error("chromium not found (apt-get install -y chromium, or set CHROMIUM)");
    process.exit(1);
  }
  const Js = jsons.map((f) => JSON.parse(readFileSync(f, "utf8")));
  const b = await Browser.launch(chromium);
  try {
    const p = await openWatched(b, page, "document.body && document.body.dataset.ready === '1'");
    const n = await b.eval(`document.querySelectorAll(".model").length`);
    check(n === Js.length, `the page shows ${n} models for ${Js.length} checkpoints`);
    for (let m = 0; m < Js.length; m++) {
      const text = await b.eval(`[...document.querySelectorAll('.model[data-m="${m}"] .tok')].map((s) => s.textContent)`);
      check(JSON.stringify(text) === JSON.stringify(Js[m].pieces), `model ${m}: the tokens read ${JSON.stringify(text.slice(0, 6))}...`);
      const title = await b.eval(`document.querySelector('.model[data-m="${m}"] h2').textContent`);
      check(title.includes(`H ${Js[m].H}`), `model ${m}: titled '${title}', its H is ${Js[m].H}`);
    }
    // Before any hover the page has a query: the last byte every model sees, so no
    // chip is an empty box.
    const seen0 = Math.min(...Js.map((J) => spans(J).b1[J.T - 1]));
    await checkQuery(b, Js, seen0 - 1, "before any hover");
    // Every chip shows its whole text (none cut off, 16 heads included), and the
    // query line names each model so that two of one shape differ.
    const look = await b.eval(`(() => ({cut: [...document.querySelectorAll(".chip")].filter((c) =>
        c.scrollWidth > c.clientWidth + 1 || c.getBoundingClientRect().right >
        c.closest(".model").getBoundingClientRect().right + 1).map((c) => c.textContent),
      empty: [...document.querySelectorAll(".chip")].filter((c) => !c.textContent.includes("\u2192")).length,
      line: document.getElementById("query").textContent}))()`);
    check(look.cut.length === 0, `chips cut off: ${JSON.stringify(look.cut.slice(0, 5))}`);
    check(look.empty === 0, `${look.empty} chips show no key before a hover`);
    const names = (look.line.split("; ")[1] || "").split(" \u00b7 ").map((x) => x.split(": ")[0]);
    check(names.length === Js.length && new Set(names).size === Js.length,
          `the query line does not tell the models apart: '${look.line}'`);
    // Hover along the first model's text, then in each other model: every model follows.
    const T0 = Js[0].T;
    for (const i of [T0 - 1, Math.floor(T0 / 2), 1]) {
      await hoverIn(b, 0, i);
      await checkQuery(b, Js, spans(Js[0]).b1[i] - 1, `hover model 0 token ${i}`);
    }
    // In each other model a token of several bytes where there is one (a byte-pair
    // model's), inside every model's window, so the byte each model's query holds matters.
    const seen = Math.min(...Js.map((J) => spans(J).b1[J.T - 1]));
    for (let m = 1; m < Js.length; m++) {
      const sp = spans(Js[m]);
      let i = Math.floor(Js[m].T * 2 / 3);
      for (let t = 0; t < Js[m].T; t++) if (sp.b1[t] - sp.b0[t] > 1 && sp.b1[t] <= seen) i = t;
      await hoverIn(b, m, i);
      await checkQuery(b, Js, spans(Js[m]).b1[i] - 1, `hover model ${m} token ${i}`);
    }
    // Pin a query in the last model, move the mouse away: it stays; one head alone.
    const last = Js.length - 1, pin = Js[last].T - 2, byte = spans(Js[last]).b1[pin] - 1;
    await b.click(`.model[data-m="${last}"] .tok[data-i="${pin}"]`);
    await b.hover(`.model[data-m="0"] .tok[data-i="0"]`);
    await checkQuery(b, Js, byte, `pinned in model ${last}`);
    const k = Js[last].L * Js[last].H - 1;
    await b.click(`.model[data-m="${last}"] .chip[data-k="${k}"]`);
    const only = []; only[last] = k;
    await checkQuery(b, Js, byte, `model ${last} head ${k} alone`, only);
    await b.click(`.model[data-m="${last}"] .chip[data-k="${k}"]`);
    await b.click(`.model[data-m="${last}"] .tok[data-i="${pin}"]`);   // unpin
    await checkRelations(b, Js);
    for (const pr of p.problems) check(false, `${page}: ${pr}`);
    const others = p.requests.filter((u) => u !== p.url);
    check(others.length === 0, `${page}: requests beyond the page itself: ${others.join(", ")}`);
    console.log(`${page}: ${Js.length} models loaded in ${p.loadMs} ms`);
  } catch (e) {
    check(false, `${page}: ${e.message}`);
  } finally {
    await b.close();
  }
  if (failures) {
    console.error(`${failures} check(s) failed`);
    process.exit(1);
  }
  console.log("compare browser test: all checks passed");
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

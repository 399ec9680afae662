// test_explore: loads an --explore page in headless Chromium and checks it
// against the full-precision weights ./infer wrote with --explore-json:
//   node tests/browser/test_explore.mjs PAGE.html WEIGHTS.json [PAGE2.html ...] [--served] [--closed]
// For each page: every token shows its piece's label; hovering a token shades
// exactly the keys it can see, each with the largest selected head's weight;
// the per-head top keys are the right keys with the right weights; switching
// the layer and toggling a head change both accordingly; the page opens on the
// clearest serving head's layer and relation; the relations section, the
// understood sentences' marks and chips, each head's role and gate and a
// thumbnail's hover agree with the JSON; a map of the model view opens large;
// and the page logged no error and made no request beyond loading itself.
// Extra pages (no JSON) are
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
  const [key, code] = l > cur ? ["ArrowDown", 40] : ["ArrowUp", 38];
  for (let k = 0; k < Math.abs(l - cur); k++) {
    await b.send("Input.dispatchKeyEvent", { type: "keyDown", key, code: key, windowsVirtualKeyCode: code });
    await b.send("Input.dispatchKeyEvent", { type: "keyUp", key, code: key, windowsVirtualKeyCode: code });
  }
  await b.until(`+document.getElementById("layer").value === ${l}`, 5000);
}

// want.served: the page must have a serving head and an understood sentence
// with planted relations; want.closed: closed and open heads (else those checks
// could pass on a page without them).
async function testWithWeights(b, file, jsonFile, want) {
  const J = JSON.parse(readFileSync(jsonFile, "utf8"));
  if (want.served)
    check(J.clearest !== null && J.sentences.some((x) => x.understood) &&
          Object.values(J.relations).some((r) => r.planted && r.query_key.length),
          `${jsonFile}: no serving head, understood sentence or planted relation to check`);
  if (want.closed)
    check(J.heads.some((h) => h.closed) && J.heads.some((h) => !h.closed),
          `${jsonFile}: not both closed and open heads`);
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
  await checkOpening(b, J);
  await selectLayer(b, 0);

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
  await checkRelationsSection(b, J);
  await checkRelationLine(b, J);
  await checkSentences(b, J);
  if (want.readme) await checkReadmeSentence(b, J);
  await checkGates(b, J);
  await checkThumbnail(b, J);
  await checkExamples(b, J);
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

// The page opens on the clearest serving head's layer and relation (layer 0 and
// no relation when no head serves any); that head serves that relation, with
// the largest attention among every head's role relation.
async function checkOpening(b, J) {
  const c = J.clearest;
  const shown = await b.eval(`({layer: +document.getElementById("layer").value,
    rel: document.getElementById("relation").value,
    about: document.getElementById("relabout").textContent})`);
  check(shown.layer === (c ? c.layer : 0), `opens on layer ${shown.layer}, clearest ${JSON.stringify(c)}`);
  check(shown.rel === (c ? c.relation : ""), `opens on relation '${shown.rel}', clearest ${JSON.stringify(c)}`);
  let best = null;
  J.heads.forEach((h, k) => {
    if (!h.serves.includes(h.role)) return;
    if (!best || h[h.role] > best.a) best = { k, a: h[h.role], rel: h.role };
  });
  check(JSON.stringify(best && [J.heads[best.k].id, best.rel]) === JSON.stringify(c && [c.head, c.relation]),
        `the clearest serving head is ${JSON.stringify(best)}, the JSON says ${JSON.stringify(c)}`);
  if (c) {
    check(shown.about.includes(J.relations[c.relation].about), `the relation's sentence is not shown: '${shown.about}'`);
    check(shown.about.includes(c.head), `the opening relation does not name its serving head ${c.head}: '${shown.about}'`);
  }
}

// Each head's role: the relation it serves with the most attention, else its
// type; the heads table and the maps show it.
function expectedRole(h) {
  let role = null;
  for (const n of h.serves) if (role === null || h[n] > h[role]) role = n;
  return role === null ? h.type : role;
}

// The relations section: one row per relation with keys on this text, its
// sentence, its pairs as relation_keys has them, and the heads that serve it.
async function checkRelationsSection(b, J) {
  const names = Object.keys(J.relation_keys).filter((n) => J.relation_keys[n]);
  check(JSON.stringify(Object.keys(J.relations)) === JSON.stringify(names),
        `relations ${JSON.stringify(Object.keys(J.relations))} for keys ${JSON.stringify(names)}`);
  const rows = await b.eval(`[...document.querySelectorAll("#reltable tbody tr")].map((tr) =>
    ({rel: tr.dataset.rel, cells: [...tr.cells].map((c) => c.textContent)}))`);
  check(rows.length === names.length, `the relations table has ${rows.length} rows for ${names.length}`);
  const page = await b.eval(`JSON.stringify(DATA.relations)`);
  check(page === JSON.stringify(J.relations), "the page's relations differ from --explore-json's");
  for (const [k, n] of names.entries()) {
    const r = J.relations[n], row = rows[k] || { cells: [] };
    check(row.rel === n, `row ${k} is ${row.rel}, want ${n}`);
    check(row.cells.includes(r.about) && r.about.startsWith("Query: "), `${n}: sentence '${r.about}' not shown`);
    const serving = J.heads.filter((h) => h.serves.includes(n)).map((h) => h.id);
    check(JSON.stringify(r.serves) === JSON.stringify(serving), `${n}: served by ${r.serves}, heads say ${serving}`);
    checkServedText(J, n, row.cells[row.cells.length - 1], `${n}: the table's served-by cell`);
    if (r.query_key) {
      const want = J.relation_keys[n].map((v, i) => (v.length ? [i, v[0]] : null)).filter((x) => x);
      check(JSON.stringify(r.query_key) === JSON.stringify(want), `${n}: query_key ${JSON.stringify(r.query_key)}`);
    }
    check(r.uniform <= 1 && r.attention <= 1 && r.rows >= 0, `${n}: attention ${r.attention}, uniform ${r.uniform}`);
  }
  for (const h of J.heads) {
    const role = await b.eval(`document.querySelector('#headtable tr[data-k="${J.heads.indexOf(h)}"]').cells[1].textContent`);
    check(h.role === expectedRole(h) && role === h.role, `${h.id}: role ${h.role} (shown ${role}), want ${expectedRole(h)}`);
  }
}

// The line above the text, for each relation picked: its sentence and who serves it.
async function checkRelationLine(b, J) {
  for (const n of Object.keys(J.relations)) {
    const about = await b.eval(`(() => { const s = document.getElementById("relation"); s.value = ${JSON.stringify(n)};
      s.dispatchEvent(new Event("change")); return document.getElementById("relabout").textContent; })()`);
    check(about.startsWith(`${n}. ${J.relations[n].about} `), `${n}: the line reads '${about}'`);
    checkServedText(J, n, about.slice(`${n}. ${J.relations[n].about} `.length).replace(/\.$/, ""),
                    `${n}: the line above the text`);
  }
  await b.eval(`(() => { const s = document.getElementById("relation"); s.value = "";
    s.dispatchEvent(new Event("change")); })()`);
}

// README's sentence ("The cat sat on the mat. Apple released a new phone because it
// is tasty."): its chips name the pairs as README does.
async function checkReadmeSentence(b, J) {
  const chips = await b.eval(`[...document.querySelectorAll("#sentences .chip")].map((c) => c.textContent)`);
  for (const want of ["subject-verb: sat \u2192 cat", "place: on \u2192 mat", "pronoun: it \u2192 Apple"])
    check(chips.includes(want), `README's sentence: no chip '${want}' among ${JSON.stringify(chips)}`);
}

// Who serves relation n, as the page says it (the relations table, the line above
// the text): the serving heads; else never a bare "no head" beside a head that
// attends above the bar: such a head is named with its attention, and why it does
// not serve (not needed, or needed not measurable on rows that are not scored).
function checkServedText(J, n, text, label) {
  const r = J.relations[n];
  if (r.serves.length) {
    check(text === "Served here by " + r.serves.join(", "), `${label} reads '${text}', serves ${r.serves}`);
    return;
  }
  let best = -1, bw = 0;
  const ws = [];
  for (let k = 0; k < J.L * J.H && r.query_key && r.query_key.length; k++) {
    let w = 0;
    for (const [i, j] of r.query_key) w += J.attention[Math.floor(k / J.H)][k % J.H][i][j];
    w /= r.query_key.length;
    ws.push(w);
    if (best < 0 || w > bw) { best = k; bw = w; }
  }
  if (best >= 0 && Math.abs(bw - r.bar) <= 0.002) return;   // at the bar: the page's rounding decides
  if (best < 0 || bw < r.bar) {
    check(text.startsWith("Served here by no head"), `${label} reads '${text}' (no head above the bar)`);
    return;
  }
  // The page reads weights stored as round(255 w), each off by up to 1/510: a head
  // within 1/255 of the best may be the page's best.
  const id = J.heads[best].id;
  const named = (k) => [0, -0.002, 0.002].some((d) =>
    text.startsWith("Not served: " + J.heads[k].id + " attends " + (ws[k] + d).toFixed(2)));
  check(ws.some((w, k) => w >= bw - 1 / 255 && named(k)),
        `${label} reads '${text}': ${id} attends ${bw.toFixed(3)}, above the bar ${r.bar}`);
  const rows = r.query_key.length;
  if (!(r.pairs > 0) && !(r.rows > 0))
    check(text.includes(`needed not measurable on ${rows} row${rows === 1 ? "" : "s"}`),
          `${label} reads '${text}': its rows are not scored and it has no pairs`);
  else
    check(text.includes("is not needed"), `${label} reads '${text}'`);
}

// A pair in words (docs/explorer.md): each token stands for the word it is part of
// in the window's bytes; "key-next" relations are named by the key and the word
// after the query.
function pairWords(J, rel, q, k) {
  const bytes = [], start = [];
  for (let t = 0; t < J.T; t++) {
    start.push(bytes.length);
    bytes.push(...(Array.isArray(J.tokens[t]) ? J.tokens[t] : [J.tokens[t]]));
  }
  start.push(bytes.length);
  const letter = (c) => /[A-Za-z0-9']/.test(String.fromCharCode(c)) || c >= 128;
  const word = (t) => {
    let a = start[t], z = start[t + 1];
    while (a < z && !letter(bytes[a])) a++;
    while (z > a && !letter(bytes[z - 1])) z--;
    if (a === z) return J.pieces[t];
    while (a > 0 && letter(bytes[a - 1])) a--;
    while (z < bytes.length && letter(bytes[z])) z++;
    return Buffer.from(bytes.slice(a, z)).toString("utf8");
  };
  return J.relations[rel].named === "key-next" && q + 1 < J.T ? `${word(k)} \u2192 ${word(q + 1)}`
    : `${word(q)} \u2192 ${word(k)}`;
}

// The sentences: understood ones marked over their tokens and listed with their
// planted relations as chips; a chip picks its relation and pins its query.
async function checkSentences(b, J) {
  const marks = await b.eval(`[...document.querySelectorAll("#tokens .tok")].map((s) =>
    s.classList.contains("su") ? "u" : s.classList.contains("sn") ? "n" : "")`);
  const want = new Array(J.T).fill("");
  for (const x of J.sentences) for (let t = x.first; t < x.end; t++) want[t] = x.understood ? "u" : "n";
  check(JSON.stringify(marks) === JSON.stringify(want), `sentence marks ${marks.join("")}, want ${want.join("")}`);
  const items = await b.eval(`[...document.querySelectorAll("#sentences li[data-sentence]")].map((li) =>
    ({u: li.dataset.understood, chips: [...li.querySelectorAll(".chip")].map((c) => [c.dataset.rel, +c.dataset.q, +c.dataset.k]),
      text: [...li.querySelectorAll(".chip")].map((c) => c.textContent),
      cut: [...li.querySelectorAll(".chip")].filter((c) => c.scrollWidth > c.clientWidth + 1 ||
        c.getBoundingClientRect().right > document.getElementById("sentences").getBoundingClientRect().right + 1)
        .map((c) => c.textContent)}))`);
  check(items.length === J.sentences.length, `${items.length} sentences listed, ${J.sentences.length} in the JSON`);
  let chips = 0;
  J.sentences.forEach((x, n) => {
    const wantChips = [];
    if (x.understood)
      for (const [rel, r] of Object.entries(J.relations))
        if (r.planted) for (const [q, k] of r.query_key) if (q >= x.first && q < x.end) wantChips.push([rel, q, k]);
    const got = items[n] || { chips: [] };
    check(JSON.stringify(got.chips) === JSON.stringify(wantChips), `sentence ${n}: chips ${JSON.stringify(got.chips)}, want ${JSON.stringify(wantChips)}`);
    // Each chip names its pair in words, whole on the page.
    const words = wantChips.map(([rel, q, k]) => `${rel}: ${pairWords(J, rel, q, k)}`);
    check(JSON.stringify(got.text || []) === JSON.stringify(words), `sentence ${n}: chips read ${JSON.stringify(got.text)}, want ${JSON.stringify(words)}`);
    check(!(got.cut || []).length, `sentence ${n}: chips cut off: ${JSON.stringify(got.cut)}`);
    chips += wantChips.length;
  });
  if (!chips) return;
  await b.click("#sentences .chip");
  const c = await b.eval(`(() => { const c = document.querySelector("#sentences .chip");
    return {rel: document.getElementById("relation").value, want: c.dataset.rel, q: +c.dataset.q, k: +c.dataset.k,
      pinned: [...document.querySelectorAll("#tokens .tok.pinned")].map((s) => +s.dataset.i),
      rk: [...document.querySelectorAll("#tokens .tok.rk")].map((s) => +s.dataset.i)}; })()`);
  check(c.rel === c.want && JSON.stringify(c.pinned) === JSON.stringify([c.q]) && JSON.stringify(c.rk) === JSON.stringify([c.k]),
        `clicking a relation chip: ${JSON.stringify(c)}`);
  await b.click(`#tokens .tok[data-i="${c.q}"]`);   // unpin
}

// The head gates, where the checkpoint has them: each head button, map and
// table row says its gate, and closed heads are marked closed.
async function checkGates(b, J) {
  const gated = J.heads[0].gate !== undefined;
  const g = await b.eval(`({line: document.getElementById("gates").textContent,
    cells: [...document.querySelectorAll("#grid .cell")].map((c) => ({closed: c.classList.contains("closed"),
      text: c.textContent})),
    hasColumn: [...document.querySelectorAll("#headtable th")].some((th) => th.textContent === "gate")})`);
  check(g.hasColumn === gated, `the heads table ${g.hasColumn ? "has" : "lacks"} a gate column, gated ${gated}`);
  if (!gated) {
    check(g.line === "", `a model without gates has a gates line: '${g.line}'`);
    return;
  }
  const closed = J.heads.filter((h) => h.closed).length;
  check(g.line.includes(`${J.heads.length - closed} of ${J.heads.length} heads open`), `gates line '${g.line}'`);
  J.heads.forEach((h, k) => {
    const cell = g.cells[k];
    check(cell.closed === h.closed, `${h.id}: map closed ${cell.closed}, gate ${h.gate}`);
    check(cell.text.includes(h.closed ? "closed" : `gate ${h.gate.toFixed(2)}`), `${h.id}: map reads '${cell.text}'`);
  });
  for (let l = 0; l < J.L; l++) {
    await selectLayer(b, l);
    const btn = await b.eval(`[...document.querySelectorAll("#headbtns button")].map((x) => x.classList.contains("closed"))`);
    check(JSON.stringify(btn) === JSON.stringify(J.heads.slice(l * J.H, (l + 1) * J.H).map((h) => h.closed)),
          `layer ${l}: closed buttons ${JSON.stringify(btn)}`);
  }
  await selectLayer(b, 0);
}

// Hovering a thumbnail of the model view names the query and key under the
// mouse, with that head's weight.
async function checkThumbnail(b, J) {
  const k = J.L * J.H - 1, T = J.T;
  const box = await b.eval(`(() => { const c = document.querySelector('#grid .cell[data-k="${k}"] canvas');
    c.scrollIntoView({block: "center"}); const r = c.getBoundingClientRect();
    return {x: r.left, y: r.top, w: r.width, h: r.height}; })()`);
  for (const [i, j] of [[T - 1, 0], [Math.floor(T / 2), Math.floor(T / 3)], [1, T - 1]]) {
    await b.mouse("mouseMoved", box.x + (j + 0.5) * box.w / T, box.y + (i + 0.5) * box.h / T);
    const tip = await b.eval(`(() => { const t = document.getElementById("thumbtip");
      return {hidden: t.hidden, k: +t.dataset.k, i: +t.dataset.i, j: +t.dataset.j, text: t.textContent}; })()`);
    check(!tip.hidden && tip.k === k && tip.i === i && tip.j === j, `thumbnail ${k} at (${i}, ${j}): ${JSON.stringify(tip)}`);
    const w = j <= i ? J.attention[J.L - 1][J.H - 1][i][j] : null;
    check(tip.text.includes(`#${i} ${J.pieces[i]}`) && tip.text.includes(`#${j} ${J.pieces[j]}`) &&
          (w === null ? tip.text.endsWith("future") : Math.abs(+tip.text.split(": ").pop() - w) <= TOL),
          `thumbnail tip '${tip.text}' for query ${i}, key ${j}, weight ${w}`);
  }
  await b.mouse("mouseMoved", 1, 1);
  check(await b.eval(`document.getElementById("thumbtip").hidden`), "the thumbnail tip stays after the mouse left");
}

// The menu of the documents' example sentences, each with its command.
async function checkExamples(b, J) {
  const ex = await b.eval(`[...document.querySelectorAll("#examples li")].map((li) => li.textContent)`);
  const docs = ["The cat sat on the mat.", "The tired cat slept on the warm mat.",
                "The cat sat on the mat. The tired cat slept on the warm mat.", "The cat sat down.",
                "The cat sat slowly down.", "Apple released a new phone because it is tasty."];
  check(ex.length === docs.length, `${ex.length} example sentences, want ${docs.length}`);
  docs.forEach((d, k) => {
    const e = ex[k] || "";
    check(e.startsWith(d) && /\.\/infer --ckpt '.*' --explore page\.html --text '.+'$/.test(e) &&
          e.endsWith(`--text '${d}'`), `example ${k}: '${e}'`);
  });
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
  const args = process.argv.slice(2);
  const want = { served: args.includes("--served"), closed: args.includes("--closed"),
                 readme: args.includes("--readme") };
  const [page, json, ...more] = args.filter((a) => !a.startsWith("--"));
  if (!page || !json) {
    console.error("usage: node tests/browser/test_explore.mjs PAGE.html WEIGHTS.json [PAGE2.html ...]");
    process.exit(2);
  }
  const chromium = findChromium();
  if (!chromium) {
    console.error("chromium not found (apt-get install -y chromium, or set CHROMIUM)");
    process.exit(1);
  }
  for (const [f, run] of [[page, (b) => testWithWeights(b, page, json, want)],
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

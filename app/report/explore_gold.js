/* The gold-dependency view: the explorer page carries this script only for a
 * treebank sentence (./infer --explore --text-file FILE.conllu), right after
 * its DATA; it adds the section "Gold dependencies" once the page is built.
 * DATA.gold (docs/explorer.md, "A treebank sentence"): each dependency of the
 * sentence's tree as the later word's last token (the query) looking back at
 * the earlier word (the key, tokens key[0]..key[1]), with every head's
 * attention on the key; and per relation the head of most mean attention.
 * Picking a dependency pins its query in the head view on its best head's
 * layer and outlines its two words in green. */
window.addEventListener("load", function goldView() {
  const G = DATA.gold, H = DATA.H;
  if (!G) return;
  const el = (tag, text, cls) => {
    const e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  };
  const headId = (k) => "L" + Math.floor(k / H) + "H" + (k % H);
  const piece = (i) => DATA.pieces[i];
  const style = el("style", ".tok.gq { outline: 2px solid #1a7f37; }\n" +
    ".tok.gk { box-shadow: inset 0 -4px 0 #1a7f37; }\n" +
    "#goldpairs tr.gsel td { background: #e6f4ea; }");
  document.head.appendChild(style);

  const about = Array.from(document.querySelectorAll("h2"))
    .find((h) => h.textContent === "About this page");
  const box = el("div");
  box.id = "gold";
  about.parentNode.insertBefore(box, about);
  box.appendChild(el("h2", "Gold dependencies"));
  box.appendChild(el("p", "Sentence " + G.sentence + " of " + G.file + " (line " + G.line +
    "): " + G.pairs.length + " dependencies of its gold tree on tokens, " + G.roots +
    " root(s) with no partner" + (G.no_token ? ", " + G.no_token +
    " with a word that has no token of its own (not shown)" : "") + ". Each is seen as " +
    "./infer --heads scores it: from the later word's last token (the query) looking back at " +
    "the earlier word (the key); a head's attention is the query row's weight summed over the " +
    "key word's tokens, against a uniform head's (key tokens / row length). Click a row to " +
    "pin its query in the head view, on its best head's layer; its two words are outlined in " +
    "green.", "hint"));

  function table(id, heads, rows) {
    const tab = el("table", undefined, "heads");
    tab.id = id;
    const hr = tab.createTHead().insertRow();
    for (const f of heads) hr.appendChild(el("th", f, "l"));
    const body = tab.createTBody();
    for (const cells of rows) {
      const tr = body.insertRow();
      for (const c of cells) tr.appendChild(el("td", c, "l"));
    }
    box.appendChild(tab);
    return body.rows;
  }

  box.appendChild(el("h3", "Each dependency"));
  const rows = table("goldpairs", ["relation", "direction", "dependent \u2192 head",
    "query \u2192 key (tokens)", "best head", "attention", "uniform"],
    G.pairs.map((p) => [p.relation, p.direction, p.dependent + " \u2192 " + p.head,
      "#" + p.query + " " + piece(p.query) + " \u2192 #" + p.key[0] +
        (p.key[1] > p.key[0] ? "\u2013" + p.key[1] : "") + " " +
        DATA.pieces.slice(p.key[0], p.key[1] + 1).join(""),
      p.best_head, p.attention[headIndex(p.best_head)].toFixed(3),
      ((p.key[1] - p.key[0] + 1) / (p.query + 1)).toFixed(3)]));
  const detail = el("p", "", "note");
  detail.id = "golddetail";
  box.appendChild(detail);

  box.appendChild(el("h3", "Per relation"));
  table("goldrelations", ["relation", "direction", "pairs", "best head", "mean attention",
    "uniform"], G.relations.map((r) => [r.relation, r.direction, String(r.pairs), r.best_head,
    r.attention.toFixed(3), r.uniform.toFixed(3)]));

  function headIndex(id) {
    const m = /^L(\d+)H(\d+)$/.exec(id);
    return +m[1] * H + +m[2];
  }

  const toks = document.querySelectorAll("#tokens .tok");
  function pick(n) {
    const p = G.pairs[n];
    Array.from(rows).forEach((tr, k) => tr.classList.toggle("gsel", k === n));
    toks.forEach((t, i) => {
      t.classList.toggle("gq", i === p.query);
      t.classList.toggle("gk", i >= p.key[0] && i <= p.key[1]);
    });
    const layer = document.getElementById("layer");
    layer.value = String(Math.floor(headIndex(p.best_head) / H));
    layer.dispatchEvent(new Event("change"));
    /* A click on a token pins it, or unpins it when it is pinned already. */
    if (!toks[p.query].classList.contains("pinned"))
      toks[p.query].dispatchEvent(new MouseEvent("click", { bubbles: true }));
    const order = p.attention.map((a, k) => [a, k]).sort((x, y) => y[0] - x[0] || x[1] - y[1]);
    detail.textContent = p.relation + " (" + p.direction + "), " + p.dependent + " \u2192 " +
      p.head + ": every head's attention on the key: " +
      order.map(([a, k]) => headId(k) + " " + a.toFixed(3)).join(", ") + ".";
    document.getElementById("layer").scrollIntoView({ behavior: "smooth", block: "center" });
  }
  Array.from(rows).forEach((tr, n) => tr.addEventListener("click", () => pick(n)));
  document.body.dataset.gold = "1";
});

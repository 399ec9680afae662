// cdp: a small client of the Chrome DevTools protocol over a pipe, enough for
// the explorer's browser test and the README screenshots. It starts headless
// Chromium with --remote-debugging-pipe (commands on fd 3, replies and events on
// fd 4, each message JSON ended by a NUL byte), so it needs no network port, no
// WebSocket and no package beyond node itself.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

// The Chromium to drive: $CHROMIUM, or Debian's.
export function findChromium() {
  for (const p of [process.env.CHROMIUM, "/usr/bin/chromium", "/usr/bin/chromium-browser"])
    if (p && existsSync(p)) return p;
  return null;
}

// Opens the page file in b and waits until the expression `ready` is true,
// recording what a page must not do: console errors and warnings, exceptions,
// error log entries (problems) and requests (requests, the page's own URL
// among them).
export async function openWatched(b, file, ready) {
  const url = pathToFileURL(resolve(file)).href;
  const problems = [], requests = [];
  b.on((m) => {
    const p = m.params;
    if (m.method === "Runtime.consoleAPICalled" && (p.type === "error" || p.type === "warning"))
      problems.push(`console.${p.type}: ${p.args.map((a) => a.value ?? a.description).join(" ")}`);
    else if (m.method === "Runtime.exceptionThrown")
      problems.push(`exception: ${p.exceptionDetails.exception?.description || p.exceptionDetails.text}`);
    else if (m.method === "Log.entryAdded" && p.entry.level === "error")
      problems.push(`log: ${p.entry.text} ${p.entry.url || ""}`);
    else if (m.method === "Network.requestWillBeSent")
      requests.push(p.request.url);
  });
  await b.send("Runtime.enable");
  await b.send("Log.enable");
  await b.send("Network.enable");
  await b.send("Page.enable");
  const t0 = Date.now();
  await b.navigate(url);
  await b.until(ready);
  return { url, problems, requests, loadMs: Date.now() - t0 };
}

export class Browser {
  // width x height: the window (and screenshot) size in CSS pixels.
  static async launch(path, width = 1280, height = 900) {
    const profile = mkdtempSync(join(tmpdir(), "headcount-cdp-"));
    const args = ["--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
      "--disable-default-apps", "--disable-extensions", "--no-first-run",
      "--no-default-browser-check", "--hide-scrollbars", "--mute-audio",
      `--window-size=${width},${height}`, `--user-data-dir=${profile}`, "about:blank"];
    const proc = spawn(path, args, { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] });
    const b = new Browser(proc, profile);
    proc.stderr.on("data", (d) => { b.stderr += d.toString(); });
    await b.attach();
    return b;
  }

  constructor(proc, profile) {
    this.proc = proc;
    this.profile = profile;
    this.stderr = "";
    this.nextId = 1;
    this.waiting = new Map();
    this.listeners = [];
    this.session = null;
    let buf = Buffer.alloc(0);
    proc.stdio[4].on("data", (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      let end;
      while ((end = buf.indexOf(0)) >= 0) {
        const msg = JSON.parse(buf.subarray(0, end).toString("utf8"));
        buf = buf.subarray(end + 1);
        this.dispatch(msg);
      }
    });
    this.exited = new Promise((res) => proc.on("exit", res));
  }

  dispatch(msg) {
    if (msg.id !== undefined && this.waiting.has(msg.id)) {
      const { resolve, reject, method } = this.waiting.get(msg.id);
      this.waiting.delete(msg.id);
      if (msg.error) reject(new Error(`${method}: ${msg.error.message}`));
      else resolve(msg.result);
      return;
    }
    for (const l of this.listeners) l(msg);
  }

  // Sends one command (to the attached page unless browser is set).
  send(method, params = {}, browser = false) {
    const id = this.nextId++;
    const msg = { id, method, params };
    if (!browser && this.session) msg.sessionId = this.session;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject, method });
      this.proc.stdio[3].write(JSON.stringify(msg) + "\0");
    });
  }

  on(fn) {
    this.listeners.push(fn);
  }

  // Resolves with the first event of this method (on the page) for which pred holds.
  waitFor(method, pred = () => true, ms = 20000) {
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`timed out waiting for ${method}`)), ms);
      this.on((m) => {
        if (m.method === method && pred(m.params)) {
          clearTimeout(t);
          resolve(m.params);
        }
      });
    });
  }

  async attach() {
    const { targetInfos } = await this.send("Target.getTargets", {}, true);
    const page = targetInfos.find((t) => t.type === "page");
    if (!page) throw new Error("Chromium opened no page");
    const { sessionId } = await this.send("Target.attachToTarget",
      { targetId: page.targetId, flatten: true }, true);
    this.session = sessionId;
  }

  // Evaluates an expression in the page; returns its value (JSON-serialisable).
  async eval(expression) {
    const r = await this.send("Runtime.evaluate",
      { expression, returnByValue: true, awaitPromise: true });
    if (r.exceptionDetails)
      throw new Error(`page threw: ${r.exceptionDetails.exception?.description || r.exceptionDetails.text}`);
    return r.result.value;
  }

  async navigate(url) {
    const loaded = this.waitFor("Page.loadEventFired");
    const r = await this.send("Page.navigate", { url });
    if (r.errorText) throw new Error(`navigating to ${url}: ${r.errorText}`);
    await loaded;
  }

  // Polls a page expression until it is truthy.
  async until(expression, ms = 20000) {
    const t0 = Date.now();
    for (;;) {
      if (await this.eval(expression)) return;
      if (Date.now() - t0 > ms) throw new Error(`timed out waiting for: ${expression}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  async mouse(type, x, y) {
    await this.send("Input.dispatchMouseEvent", { type, x, y, button: type === "mouseMoved" ? "none" : "left",
      clickCount: type === "mouseMoved" ? 0 : 1 });
  }

  // The centre of the element a selector finds, after scrolling it into view.
  async centre(selector) {
    const r = await this.eval(`(() => { const e = document.querySelector(${JSON.stringify(selector)});
      if (!e) return null; e.scrollIntoView({block: "center"}); const b = e.getBoundingClientRect();
      return {x: b.left + b.width / 2, y: b.top + b.height / 2}; })()`);
    if (!r) throw new Error(`no element matches ${selector}`);
    return r;
  }

  async hover(selector) {
    const { x, y } = await this.centre(selector);
    await this.mouse("mouseMoved", x, y);
  }

  async click(selector) {
    const { x, y } = await this.centre(selector);
    await this.mouse("mouseMoved", x, y);
    await this.mouse("mousePressed", x, y);
    await this.mouse("mouseReleased", x, y);
  }

  async screenshot(full = false) {
    const params = { format: "png" };
    if (full) {
      const { cssContentSize } = await this.send("Page.getLayoutMetrics");
      params.clip = { x: 0, y: 0, width: cssContentSize.width, height: cssContentSize.height, scale: 1 };
      params.captureBeyondViewport = true;
    }
    const { data } = await this.send("Page.captureScreenshot", params);
    return Buffer.from(data, "base64");
  }

  async close() {
    try {
      await Promise.race([this.send("Browser.close", {}, true), new Promise((r) => setTimeout(r, 3000))]);
    } catch { /* it may already be gone */ }
    const timer = setTimeout(() => this.proc.kill("SIGKILL"), 3000);
    await this.exited;
    clearTimeout(timer);
    rmSync(this.profile, { recursive: true, force: true });
  }
}

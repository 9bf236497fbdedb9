// The validator's dashboard: reads the JSON API of the server that served
// it (docs/api.md) and draws the network (/) or one uid (/uid/<n>). Every
// figure shown comes from an API route; nothing is computed that the API
// does not also give. Text from the state goes in with textContent only.
import { lineChart, barChart, PALETTE } from "./charts.js";

const REFRESH_S = 10;
const HISTORY = 500; // windows drawn
// protocol::Rejection names, in the protocol's order: one color each.
const REASONS = ["missing", "unreachable", "too_early", "too_late", "download_failed", "bad_packet", "wrong_signer",
                 "wrong_header", "not_assigned_data", "wrong_shape", "copy", "replay", "non_finite",
                 "evaluation_failed", "not_observed"];
const reasonColor = (r) => PALETTE[Math.max(0, REASONS.indexOf(r)) % PALETTE.length];

function h(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(c ?? ""));
  return e;
}

async function api(path) {
  const r = await fetch(path, { cache: "no-cache", headers: { Accept: "application/json" } });
  if (r.status === 404) return null; // nothing recorded yet (no weights posted, unknown uid)
  if (!r.ok) throw new Error(`${path}: HTTP ${r.status}`);
  return r.json();
}

const fmt = (v, digits = 4) => (v === null || v === undefined ? "–" : Number(v).toFixed(digits));
const short = (tx) => (tx && tx.length > 18 ? `${tx.slice(0, 10)}…${tx.slice(-6)}` : tx || "–");
const card = (label, value, title = "") => h("div", { class: "card", title }, h("div", { class: "label" }, label),
                                              h("div", { class: "value" }, value));
const panel = (title, id, ...extra) => h("section", { class: "panel" }, h("h2", {}, title), ...extra,
                                         h("div", { class: "chart", id }));
function table(headers, rows) {
  const head = h("tr", {}, ...headers.map(([t, cls]) => h("th", cls ? { class: cls } : {}, t)));
  return h("div", { class: "table-wrap" }, h("table", {}, h("thead", {}, head), h("tbody", {}, ...rows)));
}

// The weight a post gave `uid`, normalised as the chain does (values / sum).
function weightIn(post, uid) {
  const i = post.uids.indexOf(uid);
  const sum = post.values.reduce((a, v) => a + v, 0);
  return i < 0 || sum === 0 ? 0 : post.values[i] / sum;
}

function postsTable(posts) {
  const rows = posts.slice().reverse().map((p) =>
    h("tr", {}, h("td", {}, String(p.epoch)), h("td", {}, String(p.window)),
      h("td", { class: p.status === "confirmed" ? "ok" : p.status === "failed" ? "bad" : "" }, p.status),
      h("td", { class: "tx text", title: p.tx || p.error || "" }, short(p.tx)), h("td", {}, p.block ?? "–"),
      h("td", {}, String(p.uids.length))));
  return table([["epoch"], ["window"], ["status"], ["tx", "text"], ["block"], ["uids"]], rows);
}

// "/": the network.
async function overview(view) {
  const [scores, progress, windows, posts] = await Promise.all([
    api("/v1/scores"), api(`/v1/progress?limit=${HISTORY}`), api(`/v1/windows?limit=${HISTORY}`),
    api("/v1/weights/history?limit=20")]);
  const uids = scores ? scores.uids : [];
  const prog = progress ? progress.windows : [];
  const wins = windows ? windows.windows : [];
  const postList = posts ? posts.posts : [];
  const losses = prog.filter((p) => p.heldout_loss !== null && p.heldout_loss !== undefined);
  const last = losses.at(-1);
  const first = losses[0];

  view.replaceChildren(
    h("h1", {}, "Network"),
    h("div", { class: "cards" },
      card("last window", scores && scores.window !== null ? String(scores.window) : "–"),
      card("held-out loss", last ? fmt(last.heldout_loss) : "–",
           first && last ? `window ${first.window}: ${fmt(first.heldout_loss)}` : ""),
      card("miners scored", String(uids.length)),
      card("paid (weight > 0)", String(uids.filter((u) => u.weight > 0).length)),
      card("last weight post", postList.length ? postList.at(-1).status : "none")),
    h("div", { class: "grid" },
      panel("Held-out loss of the global model", "chart-loss"),
      panel("Rejections per window, by reason", "chart-rejections"),
      panel("Bytes received per window", "chart-bytes"),
      panel("Valid uploads per window", "chart-valid")),
    h("section", { class: "panel" }, h("h2", {}, "Miners"), scoresTable(uids)),
    h("section", { class: "panel" }, h("h2", {}, "Weight posts"), postsTable(postList)));

  const draw = () => {
    lineChart(document.getElementById("chart-loss"),
              [{ name: "held-out loss", points: prog.map((p) => [p.window, p.heldout_loss ?? null]) }]);
    const ws = wins.map((w) => w.window);
    const seen = REASONS.filter((r) => wins.some((w) => w.rejections[r]));
    for (const w of wins) for (const r of Object.keys(w.rejections)) if (!seen.includes(r)) seen.push(r);
    barChart(document.getElementById("chart-rejections"), ws,
             seen.map((r) => ({ name: r, color: reasonColor(r), values: wins.map((w) => w.rejections[r] || 0) })),
             { counts: true, none: "no rejections in these windows", legendAlways: true });
    barChart(document.getElementById("chart-bytes"), ws,
             [{ name: "bytes", color: PALETTE[0], values: wins.map((w) => w.bytes_received) }]);
    barChart(document.getElementById("chart-valid"), ws,
             [{ name: "valid", color: PALETTE[2], values: wins.map((w) => w.valid) },
              { name: "rejected", color: PALETTE[1], values: wins.map((w) => w.uids - w.valid) }], { counts: true });
  };
  draw();
  return draw;
}

function scoresTable(uids) {
  const sorted = uids.slice().sort((a, b) => b.final - a.final || a.uid - b.uid);
  const rows = sorted.map((s) =>
    h("tr", {}, h("td", {}, h("a", { href: `/uid/${s.uid}`, class: "uid" }, String(s.uid))),
      h("td", {}, fmt(s.final)), h("td", {}, fmt(s.weight)), h("td", {}, fmt(s.evidence)),
      h("td", {}, fmt(s.trust)), h("td", {}, fmt(s.sync, 2)), h("td", {}, fmt(s.penalty, 2)),
      h("td", {}, s.last_evaluated ?? "–"),
      h("td", { class: s.zeroed ? "bad text" : "text" }, s.zeroed ? "invalid last window" : "")));
  return table([["uid"], ["final"], ["weight"], ["evidence"], ["trust"], ["sync"], ["penalty"], ["evaluated"],
                ["", "text"]], rows);
}

// "/uid/<n>": one miner.
async function minerPage(view, uid) {
  const [m, posts] = await Promise.all([api(`/v1/miners/${uid}?limit=${HISTORY}`),
                                        api(`/v1/weights/history?limit=${HISTORY}`)]);
  if (!m) {
    view.replaceChildren(h("h1", {}, `uid ${uid}`), h("p", {}, "This validator has no record of this uid."),
                         h("p", {}, h("a", { href: "/" }, "← network")));
    return () => {};
  }
  const s = m.score;
  const hist = m.history;
  const postList = posts ? posts.posts : [];
  const evald = hist.filter((r) => r.loss_before_own !== undefined);
  view.replaceChildren(
    h("p", {}, h("a", { href: "/" }, "← network")),
    h("h1", {}, `uid ${uid}`),
    h("div", { class: "cards" },
      card("final score", fmt(s.final)), card("weight", fmt(s.weight)),
      card("evidence", fmt(s.evidence)), card("trust (BMA)", `${fmt(s.trust)} (${fmt(s.bma)})`),
      card("sync", fmt(s.sync, 2)), card("penalty", fmt(s.penalty, 2)),
      card("last evaluated", s.last_evaluated ?? "–"),
      card("windows judged", String(hist.length)),
      card("hotkey", s.hotkey_ss58 ? short(s.hotkey_ss58) : "–", s.hotkey_ss58 || "")),
    h("div", { class: "grid" },
      panel("Final score after each window", "chart-final"),
      panel("Weight in each post", "chart-weight"),
      panel("Gradient score (loss improvement)", "chart-gradient"),
      panel("Loss before and after its update", "chart-losses")),
    h("section", { class: "panel" }, h("h2", {}, "Windows"), historyTable(hist)));
  const draw = () => {
    lineChart(document.getElementById("chart-final"), [{ name: "final", points: hist.map((r) => [r.window, r.final]) }]);
    lineChart(document.getElementById("chart-weight"),
              [{ name: "weight", points: postList.map((p) => [p.window, weightIn(p, uid)]) }]);
    lineChart(document.getElementById("chart-gradient"),
              [{ name: "gradient score", points: evald.map((r) => [r.window, r.gradient_score]) }]);
    lineChart(document.getElementById("chart-losses"), [
      { name: "own data, before", points: evald.map((r) => [r.window, r.loss_before_own]) },
      { name: "own data, after", points: evald.map((r) => [r.window, r.loss_after_own]) },
      { name: "random data, before", points: evald.map((r) => [r.window, r.loss_before_rand]) },
      { name: "random data, after", points: evald.map((r) => [r.window, r.loss_after_rand]) }]);
  };
  draw();
  return draw;
}

function historyTable(hist) {
  const rows = hist.slice().reverse().map((r) =>
    h("tr", {}, h("td", {}, String(r.window)),
      h("td", { class: r.valid ? "ok text" : "bad text" }, r.valid ? "valid" : r.reason || "invalid"),
      h("td", {}, r.gradient_score === undefined ? "–" : fmt(r.gradient_score, 5)),
      h("td", {}, r.binary === undefined ? "–" : String(r.binary)),
      h("td", {}, fmt(r.final)), h("td", { class: "detail" }, r.detail || "")));
  return table([["window"], ["result", "text"], ["gradient"], ["binary"], ["final"], ["detail", "text"]], rows);
}

// Which page, from the address: "/uid/<n>" or the network.
function route() {
  const m = location.pathname.match(/^\/uid\/(\d{1,5})$/);
  return m ? { page: "uid", uid: Number(m[1]) } : { page: "overview" };
}

async function main() {
  const view = document.getElementById("view");
  const status = document.getElementById("status");
  document.getElementById("every").textContent = String(REFRESH_S);
  const where = route();
  let redraw = null;
  let rendering = false;
  const refresh = async () => {
    if (rendering) return;
    rendering = true;
    try {
      const health = await api("/healthz");
      document.getElementById("node").textContent =
        `${health.role} ${health.version}` + (where.page === "uid" ? ` · uid ${where.uid}` : "");
      redraw = where.page === "uid" ? await minerPage(view, where.uid) : await overview(view);
      status.className = "status";
      status.textContent = `window ${health.window ?? "–"} · updated ${new Date().toLocaleTimeString()}`;
      document.body.dataset.loaded = where.page;
    } catch (e) {
      status.className = "status error";
      status.textContent = `API unreachable (${e.message}); showing the last answer`;
    } finally {
      rendering = false;
    }
  };
  await refresh();
  setInterval(refresh, REFRESH_S * 1000);
  let pending = 0;
  window.addEventListener("resize", () => {
    clearTimeout(pending);
    pending = setTimeout(() => redraw && redraw(), 150);
  });
}

main();

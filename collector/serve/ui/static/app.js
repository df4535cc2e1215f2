// tracescore's live UI: plain JavaScript, no build step, nothing fetched but this server's API.
// Every value from the API goes into the page as text (never as HTML). The token, when the server
// needs one, is kept in this tab's sessionStorage and sent as the Authorization header, never in a URL.
"use strict";

const TOKEN_KEY = "tracescore.token";
const PAGE_SIZE = 50;
const view = document.getElementById("view");
const live = document.getElementById("live");
let config = { trace_url: null, specs: [] };
let onVerdict = null; // what the page on screen does when a verdict arrives

// --- DOM ------------------------------------------------------------------------------------------
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}
const svg = (tag, attrs) => {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attrs)) el.setAttribute(key, String(value));
  return el;
};

// --- numbers with units that fit their size --------------------------------------------------------
function duration(ms) {
  if (ms === null || ms === undefined) return "—";
  if (ms < 1) return `${ms.toFixed(2)} ms`;
  if (ms < 100) return `${ms.toFixed(1)} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
  if (ms < 3600000) return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
  return `${Math.floor(ms / 3600000)} h ${Math.round((ms % 3600000) / 60000)} min`;
}
const percent = (r) => (r === null || r === undefined ? "—" : `${(r * 100).toFixed(r === 1 || r === 0 ? 0 : 1)} %`);
function when(iso) {
  if (!iso) return "—";
  const d = new Date(iso.endsWith("Z") ? iso : `${iso}Z`);
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}
const text = (value) => (value === null || value === undefined ? "" : typeof value === "string" ? value : JSON.stringify(value, null, 2));
const badge = (label, title) => h("span", { class: `badge ${label || "none"}`, title }, label || "not scored");

function throttled(action, ms) {
  let waiting = false;
  return () => {
    if (waiting) return;
    waiting = true;
    setTimeout(() => { waiting = false; action(); }, ms);
  };
}

// --- the API ---------------------------------------------------------------------------------------
function headers() {
  const token = sessionStorage.getItem(TOKEN_KEY);
  return token ? { Authorization: `Bearer ${token}` } : {};
}
let asking = null; // one question for every read refused at once
function askToken() {
  if (asking) return asking;
  const form = document.getElementById("token");
  form.hidden = false;
  document.getElementById("token-input").focus();
  asking = new Promise((resolve) => {
    form.onsubmit = (event) => {
      event.preventDefault();
      sessionStorage.setItem(TOKEN_KEY, document.getElementById("token-input").value.trim());
      form.hidden = true;
      asking = null;
      resolve();
    };
  });
  return asking;
}
async function api(path, params) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params || {})) {
    for (const v of [].concat(value)) if (v !== undefined && v !== null && v !== "") query.append(key, v);
  }
  const url = `/api/v1/${path}${query.toString() ? `?${query}` : ""}`;
  for (;;) {
    const response = await fetch(url, { headers: headers(), cache: "no-store" });
    if (response.status === 401) { await askToken(); continue; }
    const body = await response.json();
    if (!response.ok) throw new Error(body.error || `${response.status}`);
    return body;
  }
}
const traceLink = (traceId) =>
  config.trace_url ? h("a", { href: config.trace_url.replace("{trace_id}", encodeURIComponent(traceId)), rel: "noreferrer", target: "_blank" }, "open trace ↗") : null;

// --- the verdict stream: new verdicts as they are judged, read as newline-delimited JSON ----------
async function watch() {
  for (;;) {
    try {
      const response = await fetch("/api/v1/verdicts/watch", { headers: headers(), cache: "no-store" });
      if (response.status === 401) { live.textContent = "token needed"; await askToken(); continue; }
      live.textContent = "live"; live.classList.add("on");
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffered = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffered += decoder.decode(value, { stream: true });
        const lines = buffered.split("\n");
        buffered = lines.pop();
        for (const line of lines) {
          if (!line.trim()) continue;
          const verdict = JSON.parse(line);
          if (!verdict.error && onVerdict) onVerdict(verdict);
        }
      }
    } catch (error) { /* the server restarted or the network dropped: reconnect below */ }
    live.textContent = "reconnecting…"; live.classList.remove("on");
    await new Promise((resolve) => setTimeout(resolve, 2000));
  }
}

// --- runs ------------------------------------------------------------------------------------------
const FILTERS = [
  ["task", "Task", "text"], ["spec", "Spec", "spec"], ["label", "Label", "label"], ["service", "Service", "text"],
  ["version", "Version (service.version)", "text"], ["where", "Attribute KEY=VALUE", "text"],
  ["since", "Started from", "datetime-local"], ["until", "Started before", "datetime-local"],
];
function field([name, title, kind], value) {
  let input;
  if (kind === "label") {
    input = h("select", { name, id: `f-${name}` }, h("option", { value: "" }, "any"),
      ["pass", "fail", "error"].map((l) => h("option", { value: l, selected: l === value }, l)));
  } else if (kind === "spec") {
    input = h("select", { name, id: `f-${name}` }, h("option", { value: "" }, "any"),
      config.specs.map((s) => h("option", { value: s, selected: s === value }, s)));
    if (value && !config.specs.includes(value)) input.append(h("option", { value, selected: true }, value));
  } else {
    input = h("input", { name, id: `f-${name}`, type: kind, value: value || "", step: kind === "datetime-local" ? 1 : null });
  }
  return h("label", { for: `f-${name}` }, title, input);
}
const toUtc = (local) => (local ? new Date(local).toISOString() : "");

async function runsPage(params) {
  const form = h("form", { class: "filters", role: "search", "aria-label": "filter runs" },
    FILTERS.map((f) => field(f, params.get(f[0]))),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Filter"),
      h("button", { type: "button", class: "plain", onclick: () => { location.hash = "#/"; } }, "Clear")));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const [key, value] of new FormData(form)) if (value) next.set(key, value);
    location.hash = `#/?${next}`;
  });
  const list = h("ol", { class: "runs", "aria-label": "runs, newest first" });
  const pager = h("div", { class: "pager" });
  view.replaceChildren(h("h1", {}, "Runs"), form, list, pager);
  const query = {};
  for (const [name] of FILTERS) query[name] = params.get(name);
  query.since = toUtc(query.since); query.until = toUtc(query.until);
  const after = params.get("after");
  const seen = new Set();
  async function load(fresh) {
    const page = await api("runs/page", { ...query, after, limit: PAGE_SIZE });
    const rows = page.runs.map((run) => runRow(run, fresh && !seen.has(run.run_id)));
    page.runs.forEach((run) => seen.add(run.run_id));
    list.replaceChildren(h("li", { class: "head", "aria-hidden": "true" },
      h("span", {}, "run"), h("span", {}, "task"), h("span", {}, "verdicts"), h("span", {}, "service"),
      h("span", { class: "num" }, "duration"), h("span", { class: "num" }, "tools"), h("span", {}, "completed")),
      ...rows);
    if (!page.runs.length) {
      list.append(h("li", { class: "muted" }, page.next
        ? "No run matches among the runs looked at so far: older ones may (older →)."
        : "No run matches these filters yet."));
    }
    const older = new URLSearchParams(params); older.set("after", page.next || "");
    const newest = new URLSearchParams(params); newest.delete("after");
    pager.replaceChildren(...[
      after ? h("a", { href: `#/?${newest}` }, "← newest") : null,
      page.next ? h("a", { href: `#/?${older}` }, "older →") : null,
      h("span", { class: "muted" }, after ? "live updates show on the newest page" : "updates live as runs are judged"),
    ].filter(Boolean));
  }
  await load(false);
  // At most one reload a quarter second, however fast verdicts come (a steady stream still shows).
  onVerdict = after ? null : throttled(() => load(true).catch(() => {}), 250);
}
function runRow(run, fresh) {
  const verdicts = run.verdicts.length
    ? run.verdicts.map((v) => { const b = badge(v.label, v.reason || v.label); b.textContent = `${v.spec}: ${v.label}`; return b; })
    : [badge(null)];
  return h("li", {}, h("a", { class: `row${fresh ? " new" : ""}`, href: `#/run/${encodeURIComponent(run.run_id)}`, "data-run": run.run_id },
    h("span", { class: "wide" }, h("strong", {}, run.run_id)),
    h("span", {}, run.task_id || "—"),
    h("span", { class: "badges wide" }, verdicts),
    h("span", {}, run.service_name || "—"),
    h("span", { class: "num" }, duration(run.duration_ms)),
    h("span", { class: "num", title: "tool executions" }, `${run.n_executions} ⚙`),
    h("span", { class: "wide muted" }, when(run.completed_at))));
}

// --- a run -----------------------------------------------------------------------------------------
async function runPage(runId) {
  const run = await api("run", { run: runId });
  const first = run.traces[0];
  const failing = run.verdicts.flatMap((v) => v.checks.filter((c) => !c.satisfied).map((c) => ({ ...c, spec: v.spec })));
  const culprits = new Set(failing.map((c) => c.target));
  const facts = h("dl", { class: "facts" },
    fact("task", first.task_id ? h("a", { href: `#/task/${encodeURIComponent(first.task_id)}` }, first.task_id) : "—"),
    fact("service", first.service_name || "—"), fact("agent", first.agent_name || "—"),
    fact("started", when(first.start_time)), fact("completed", when(run.traces.at(-1).completed_at)),
    fact("trace", ...run.traces.map((t) => h("span", {}, h("code", {}, t.trace_id), " ", traceLink(t.trace_id)))),
    run.conversation ? fact("conversation", h("a", { href: `#/conversation/${encodeURIComponent(run.conversation.conversation_id)}` },
      run.conversation.conversation_id), run.conversation.turn_index !== null ? ` (turn ${run.conversation.turn_index})` : "") : null);
  view.replaceChildren(
    h("h1", {}, "Run ", h("code", {}, run.run_id)), facts,
    h("h2", {}, "Verdicts"),
    run.verdicts.length ? h("div", { class: "verdicts" }, run.verdicts.map(verdictCard))
      : h("p", { class: "muted" }, "Not scored yet: verdicts appear here as they are judged."),
    h("h2", {}, `Executions (${run.executions.length})`),
    run.executions.length ? h("ol", { class: "plain-list", "aria-label": "executions in order" },
      run.executions.map((e, i) => executionCard(e, i, culprits.has(e.tool_name) ? failing.filter((c) => c.target === e.tool_name) : []))) : h("p", { class: "muted" }, "No tool was executed."),
    h("h2", {}, `Requested, never executed (${run.requested_never_executed.length})`),
    run.requested_never_executed.length ? tableOf(["tool", "arguments", "round", "requested", "agent path"],
      run.requested_never_executed.map((r) => [r.tool_name, h("pre", {}, text(r.arguments ?? r.arguments_raw)), r.round, when(r.requested_at), r.agent_path || "—"]))
      : h("p", { class: "muted" }, "Every requested call was executed."));
  onVerdict = (verdict) => { if (verdict.run_id === runId) route(); };
}
const fact = (name, ...value) => h("div", {}, h("dt", {}, name), h("dd", {}, ...value));
function verdictCard(v) {
  return h("section", { class: `card ${v.label}`, "aria-label": `spec ${v.spec}: ${v.label}` },
    h("h3", {}, badge(v.label), h("span", {}, v.spec), v.value !== null && v.value !== undefined ? h("span", { class: "muted" }, `value ${v.value}`) : null),
    v.reason ? h("p", { class: "reason" }, v.reason) : null,
    v.checks.length ? tableOf(["check", "target", "", "reason"], v.checks.map((c) => [c.kind, c.target || "—", c.satisfied ? "✓" : "✗", c.detail]),
      v.checks.map((c) => (c.satisfied ? "" : "unsatisfied"))) : null);
}
function executionCard(e, index, failing) {
  const flags = [e.error ? "error" : null, e.paused ? `paused${e.pause_reason ? `: ${e.pause_reason}` : ""}` : null, e.from_history ? "replayed" : null, e.kind !== "tool" ? e.kind : null].filter(Boolean);
  return h("li", { class: `card${failing.length ? " culprit" : ""}`, tabindex: 0, "data-tool": e.tool_name },
    h("h3", {}, h("span", { class: "muted" }, `#${index + 1}`), h("code", {}, e.tool_name), h("span", { class: "num" }, duration(e.duration_ms)),
      h("span", { class: "flags" }, flags.map((f) => h("span", { class: "flag" }, f)))),
    failing.map((c) => h("p", { class: "reason culprit-note" }, `✗ ${c.spec} · ${c.kind}: ${c.detail}`)),
    h("dl", { class: "facts" },
      fact("arguments", h("pre", {}, text(e.arguments ?? e.arguments_raw) || "—")),
      fact("result", h("pre", {}, text(e.result) || "—")),
      e.error ? fact("error", `${e.error_type || "error"}${e.error_message ? `: ${e.error_message}` : ""}`) : null,
      fact("agent path", e.agent_path || "—"),
      fact("answers", e.request_span_id ? `request in span ${e.request_span_id}, round ${e.request_round}, call ${e.request_position + 1}` : "no recorded request"),
      fact("started", when(e.start_time))));
}
// A figure with its unit, right-aligned in a table as numbers are.
const N = (text) => ({ figure: text });
const isFigure = (cell) => typeof cell === "number" || (cell !== null && typeof cell === "object" && "figure" in cell);
function tableOf(columns, rows, rowClasses) {
  const figures = columns.map((_, j) => rows.length > 0 && rows.every((cells) => isFigure(cells[j])));
  return h("div", { class: "table-wrap" }, h("table", { class: "stack" },
    h("thead", {}, h("tr", {}, columns.map((c, j) => h("th", { scope: "col", class: figures[j] ? "num" : null }, c)))),
    h("tbody", {}, rows.map((cells, i) => h("tr", { class: rowClasses ? rowClasses[i] || null : null },
      cells.map((cell, j) => h("td", { "data-label": columns[j] || "ok", class: isFigure(cell) ? "num" : null },
        isFigure(cell) && typeof cell === "object" ? cell.figure : cell)))))));
}

// --- a task ----------------------------------------------------------------------------------------
async function taskPage(task) {
  const [results, detail] = await Promise.all([api("tasks", { task }), api("task", { task })]);
  view.replaceChildren(h("h1", {}, "Task ", h("code", {}, task)),
    h("p", {}, h("a", { href: `#/?task=${encodeURIComponent(task)}` }, "its runs")),
    h("h2", {}, "Pass rates"),
    tableOf(["spec", "runs", "pass rate", "pass@k", "pass^k", "k", "p50", "p95", "p99"], results.map((r) => [
      r.spec, r.n_runs, N(percent(r.pass_rate)), N(percent(r.pass_at_k)), N(percent(r.pass_hat_k)), r.k,
      N(duration(r.execution_latency?.p50_ms)), N(duration(r.execution_latency?.p95_ms)), N(duration(r.execution_latency?.p99_ms))])),
    h("h2", {}, `Pass rate over time (per ${detail.history_bucket})`),
    h("div", {}, detail.specs.map((spec) => historyChart(spec, detail.history.filter((p) => p.spec === spec)))),
    h("h2", {}, "Latency per tool (clean executions)"),
    tableOf(["tool", "n", "errored", "p50", "p95", "p99", "max"], detail.tool_latency.map((t) => [
      t.tool, t.n, t.n_errored, N(duration(t.p50_ms)), N(duration(t.p95_ms)), N(duration(t.p99_ms)), N(duration(t.max_ms))])));
  const reload = throttled(route, 1000);
  onVerdict = (verdict) => { if (verdict.task === task) reload(); };
}
function historyChart(spec, points) {
  const chart = svg("svg", { class: "chart", viewBox: "0 0 400 100", preserveAspectRatio: "none", role: "img",
    "aria-label": `${spec}: pass rate per bucket, ${points.map((p) => `${when(p.start)} ${percent(p.pass_rate)}`).join("; ")}` });
  const width = 400 / Math.max(points.length, 1);
  points.forEach((p, i) => {
    const rate = p.pass_rate ?? 0;
    chart.append(svg("rect", { x: i * width + 1, y: 100 - rate * 100, width: Math.max(width - 2, 1), height: Math.max(rate * 100, 1), class: p.pass_rate === null ? "bar-none" : "bar-pass" }));
  });
  return h("figure", { class: "card" }, h("figcaption", {}, spec, " ", h("span", { class: "muted" }, points.length ? `${when(points[0].start)} → ${when(points.at(-1).end)}` : "no history")), chart);
}

// --- a conversation --------------------------------------------------------------------------------
async function conversationPage(id) {
  const conversation = await api("conversation", { conversation: id });
  view.replaceChildren(h("h1", {}, "Conversation ", h("code", {}, id)),
    conversation.verdicts.length ? h("div", {}, conversation.verdicts.map((v) => h("section", { class: `card ${v.label}` },
      h("h3", {}, badge(v.label), v.spec), v.reason ? h("p", { class: "reason" }, v.reason) : null,
      tableOf(["turn", "run", "", "reason"], (v.turns || []).map((t) => [t.index, h("a", { href: `#/run/${encodeURIComponent(t.run_id)}` }, t.run_id), t.passed ? "✓" : "✗", t.reason || ""]),
        (v.turns || []).map((t) => (t.passed ? "" : "unsatisfied")))))) : h("p", { class: "muted" }, "No conversation verdict yet."),
    h("h2", {}, `Turns (${conversation.turns.length})`),
    tableOf(["turn", "run", "verdicts", "started", "tools"], conversation.turns.map((t, i) => [
      t.turn_index ?? i + 1, h("a", { href: `#/run/${encodeURIComponent(t.run_id)}` }, t.run_id),
      h("span", { class: "badges" }, t.verdicts.length ? t.verdicts.map((v) => badge(v.label, v.reason)) : badge(null)),
      when(t.start_time), t.n_executions])));
  onVerdict = (verdict) => { if (verdict.run_id === id || conversation.turns.some((t) => t.run_id === verdict.run_id)) route(); };
}

// --- routing ---------------------------------------------------------------------------------------
async function route() {
  onVerdict = null;
  const hash = location.hash.slice(1) || "/";
  const [path, query] = hash.split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  try {
    if (parts[0] === "run" && parts[1]) await runPage(parts[1]);
    else if (parts[0] === "task" && parts[1]) await taskPage(parts[1]);
    else if (parts[0] === "conversation" && parts[1]) await conversationPage(parts[1]);
    else await runsPage(new URLSearchParams(query || ""));
    document.title = `tracescore · ${view.querySelector("h1")?.textContent || ""}`;
  } catch (error) {
    view.replaceChildren(h("h1", {}, "Could not load this page"), h("p", { class: "error-box" }, error.message));
  }
  document.body.dataset.ready = location.hash || "#/"; // which page is on screen (tests wait for it)
}

async function start() {
  try { config = await api("ui"); } catch (error) { /* the pages work without it: no trace links, no spec list */ }
  window.addEventListener("hashchange", () => { route().then(() => view.focus()); });
  await route();
  watch();
}
start();

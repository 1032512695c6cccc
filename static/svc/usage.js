// Usage and cost (contract §16): totals, a chart per day, and tables per session, profile and
// model, all from GET /api/usage. The API's days are UTC days and its cost is `cost_usd`, so the
// page counts days in UTC and shows cost in USD.
import { api } from "./api.js";
import { view, visible } from "./nav.js";
import { hashParams, html, useEffect, useMemo, useRef, useState } from "./ui.js";
// uPlot loads with the first chart, not with the page (most loads never show this view).
let uPlotLoading = null;
let uPlotLoaded = null; // once here, charts are made in the same task (no moment without one)
const loadUPlot = () => (uPlotLoading ||= import("uplot").then((module) => (uPlotLoaded = module.default)));

const RANGES = [7, 30, 90];
const REFRESH_MS = 30_000;
const DAY_S = 86_400;
const TOKEN_FIELDS = ["input_tokens", "cached_input_tokens", "output_tokens", "reasoning_tokens"];

const integer = new Intl.NumberFormat();
const compact = new Intl.NumberFormat(undefined, { notation: "compact", maximumFractionDigits: 1 });
// Costs of single requests are fractions of a cent: up to six decimals, as the API rounds them.
const usd = new Intl.NumberFormat(undefined, {
  style: "currency",
  currency: "USD",
  minimumFractionDigits: 2,
  maximumFractionDigits: 6,
});
const n = (value) => integer.format(value || 0);
const money = (value) => usd.format(value || 0);

// The first UTC day of a range of `days` days that ends today (the API's `since`, a date).
function firstDay(days) {
  const now = new Date();
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - (days - 1)));
}

function sum(rows) {
  const total = { requests: 0, errors: 0, cost_usd: 0 };
  for (const field of TOKEN_FIELDS) total[field] = 0;
  for (const row of rows) {
    for (const field of ["requests", "errors", ...TOKEN_FIELDS]) total[field] += row[field] || 0;
    total.cost_usd += row.cost_usd || 0;
  }
  // The API rounds each group to six decimals; the sum of those must not show float noise.
  total.cost_usd = Math.round(total.cost_usd * 1e6) / 1e6;
  return total;
}

const byCost = (a, b) => b.cost_usd - a.cost_usd || b.input_tokens + b.output_tokens - a.input_tokens - a.output_tokens;

async function load(days) {
  const since = firstDay(days).toISOString().slice(0, 10);
  const [day, session, profile, model] = await Promise.all(
    ["day", "session", "profile", "model"].map((group) => api("GET", `usage?group_by=${group}&since=${since}`)),
  );
  return { days, since, day, session: session.sort(byCost), profile: profile.sort(byCost), model: model.sort(byCost) };
}

function colours() {
  const css = getComputedStyle(document.documentElement);
  const get = (name, fallback) => css.getPropertyValue(name).trim() || fallback;
  return {
    fg: get("--fg", "#1b1b1b"),
    muted: get("--muted", "#555555"),
    line: get("--line", "#d0d0d0"),
    input: get("--accent", "#1f5f8b"),
    output: get("--ok", "#1d6b34"),
    cost: get("--bad", "#a12a1d"),
  };
}

// Every day of the range, zero where nothing was used, as uPlot's columns (x in UTC seconds).
function columns(data) {
  const start = firstDay(data.days).getTime() / 1000;
  const byDay = new Map(data.day.map((row) => [row.day, row]));
  const xs = [],
    input = [],
    output = [],
    cost = [];
  for (let i = 0; i < data.days; i++) {
    const x = start + i * DAY_S;
    const row = byDay.get(new Date(x * 1000).toISOString().slice(0, 10)) || {};
    xs.push(x);
    input.push(row.input_tokens || 0);
    output.push(row.output_tokens || 0);
    cost.push(row.cost_usd || 0);
  }
  return [xs, input, output, cost];
}

function chartHeight(width) {
  return Math.round(Math.max(180, Math.min(300, width * 0.55)));
}

function options(uPlot, width, c) {
  const axis = { stroke: c.fg, grid: { stroke: c.line, width: 1 }, ticks: { stroke: c.line, width: 1 } };
  return {
    width,
    height: chartHeight(width),
    tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
    cursor: { drag: { x: false, y: false } },
    legend: { live: false }, // hover values are no use on a phone; the tables give the numbers
    // uPlot hands its callbacks the chart (and a range its min) first; these need only what follows.
    scales: { x: { time: true }, tokens: { range: (_u, _min, max) => [0, Math.max(max, 1)] }, usd: { range: (_u, _min, max) => [0, max > 0 ? max : 0.01] } },
    series: [
      { label: "Day (UTC)", value: (_u, ts) => (ts == null ? "" : new Date(ts * 1000).toISOString().slice(0, 10)) },
      {
        label: "Input tokens",
        scale: "tokens",
        stroke: c.input,
        width: 2,
        points: { show: true, size: 5, fill: c.input },
        value: (_u, v) => (v == null ? "" : n(v)),
      },
      {
        label: "Output tokens",
        scale: "tokens",
        stroke: c.output,
        width: 2,
        points: { show: true, size: 5, fill: c.output },
        value: (_u, v) => (v == null ? "" : n(v)),
      },
      {
        label: "Cost (USD)",
        scale: "usd",
        stroke: c.cost,
        width: 2,
        dash: [6, 4],
        points: { show: true, size: 5, fill: c.cost },
        value: (_u, v) => (v == null ? "" : money(v)),
      },
    ],
    axes: [
      { ...axis, space: 60 },
      { ...axis, scale: "tokens", size: 52, values: (_u, ticks) => ticks.map((v) => compact.format(v)) },
      {
        ...axis,
        scale: "usd",
        side: 1,
        size: 64,
        grid: { show: false },
        values: (_u, ticks) => ticks.map((v) => `$${v < 0.01 && v > 0 ? v.toPrecision(2) : v.toFixed(2)}`),
      },
    ],
  };
}

// The colours live in CSS variables that change with the scheme; the canvas must be redrawn.
function useDarkScheme() {
  const [dark, setDark] = useState(() => matchMedia("(prefers-color-scheme: dark)").matches);
  useEffect(() => {
    const query = matchMedia("(prefers-color-scheme: dark)");
    const changed = () => setDark(query.matches);
    query.addEventListener("change", changed);
    return () => query.removeEventListener("change", changed);
  }, []);
  return dark;
}

function Chart({ data, label }) {
  const box = useRef(null);
  const plot = useRef(null);
  const cols = useMemo(() => columns(data), [data]);
  const scheme = useDarkScheme();

  const latestCols = useRef(cols);
  latestCols.current = cols;
  useEffect(() => {
    const node = box.current;
    const width = () => Math.max(200, Math.floor(node.clientWidth));
    let chart = null;
    let observer = null;
    let gone = false;
    const make = (uPlot) => {
      if (gone) return;
      chart = new uPlot(options(uPlot, width(), colours()), latestCols.current, node);
      plot.current = chart;
      node.dataset.series = String(chart.series.length); // x and the drawn series, for tests
      // A hidden view measures 0 wide: resize only to a real width, when it is shown again.
      observer = new ResizeObserver(() => {
        if (node.clientWidth > 0 && Math.floor(node.clientWidth) !== chart.width) {
          chart.setSize({ width: width(), height: chartHeight(width()) });
        }
      });
      observer.observe(node);
    };
    if (uPlotLoaded) make(uPlotLoaded);
    else loadUPlot().then(make);
    return () => {
      gone = true;
      if (observer) observer.disconnect();
      if (chart) chart.destroy();
      plot.current = null;
    };
  }, [scheme]); // a new range is new data (setData below), not a new chart

  useEffect(() => {
    if (plot.current) plot.current.setData(cols);
  }, [cols]);

  return html`<div class="usage-chart" ref=${box} role="img" aria-label=${label}></div>`;
}

function Totals({ total }) {
  const items = [
    ["Requests", n(total.requests)],
    ["Failed requests", n(total.errors)],
    ["Input tokens", n(total.input_tokens)],
    ["Cached input tokens", n(total.cached_input_tokens)],
    ["Output tokens", n(total.output_tokens)],
    ["Reasoning tokens", n(total.reasoning_tokens)],
    ["Cost (USD)", money(total.cost_usd)],
  ];
  return html`<dl class="usage-totals">
    ${items.map(([name, value]) => html`<div class="card"><dt>${name}</dt><dd data-total=${name}>${value}</dd></div>`)}
  </dl>`;
}

function numbers(row) {
  return html`
    <td class="num">${n(row.requests)}</td>
    <td class=${row.errors ? "num usage-errors" : "num"}>${n(row.errors)}</td>
    <td class="num">${n(row.input_tokens)}</td>
    <td class="num opt">${n(row.cached_input_tokens)}</td>
    <td class="num">${n(row.output_tokens)}</td>
    <td class="num" data-usd=${row.cost_usd}>${money(row.cost_usd)}</td>`;
}

function Table({ caption, first, rows, name, kind, empty }) {
  if (!rows.length) return html`<h3>${caption}</h3><p class="hint">${empty}</p>`;
  return html`
    <h3 id=${`usage-${kind}-title`}>${caption}</h3>
    <div class="table-wrap" tabindex="0" role="region" aria-labelledby=${`usage-${kind}-title`}>
      <table class="usage-table" data-group=${kind}>
        <thead><tr>
          <th scope="col">${first}</th><th scope="col" class="num">Requests</th><th scope="col" class="num">Failed</th>
          <th scope="col" class="num">Input</th><th scope="col" class="num opt">Cached input</th>
          <th scope="col" class="num">Output</th><th scope="col" class="num">Cost (USD)</th>
        </tr></thead>
        <tbody>${rows.map((row) => html`<tr data-key=${row.key}><th scope="row">${name(row)}</th>${numbers(row)}</tr>`)}</tbody>
      </table>
    </div>`;
}

function sessionName(row) {
  if (!row.agent) return html`<span>deleted session ${row.session_id.slice(0, 8)}</span>`;
  const title = row.title || `${row.agent} session ${row.session_id.slice(0, 8)}`;
  return html`<a href=${`#session=${row.session_id}`}>${title}</a>${row.title ? html` <span class="usage-agent">${row.agent}</span>` : null}`;
}

// The usage of the last `days` days, loaded while the view is shown (a hidden view loads when it
// is shown) and again every half minute; an older answer that arrives late is dropped.
function useUsage(days) {
  const [data, setData] = useState(null);
  const [error, setError] = useState("");
  const latest = useRef(0);
  const here = view.value === "usage" && visible.value;
  useEffect(() => {
    if (!here) return undefined;
    const refresh = async () => {
      const ticket = ++latest.current;
      try {
        const loaded = await load(days);
        if (ticket === latest.current) {
          setData(loaded);
          setError("");
        }
      } catch (e) {
        if (ticket === latest.current) setError(e.message);
      }
    };
    refresh();
    const timer = setInterval(refresh, REFRESH_MS);
    return () => clearInterval(timer);
  }, [days, here]);
  return { data, error };
}

function Picker({ days, setDays, data, error }) {
  return html`<div class="row usage-range" role="group" aria-label="Time range">
    <span class="segmented">${RANGES.map((d) => html`<button type="button" aria-pressed=${d === days ? "true" : "false"} onClick=${() => setDays(d)}>${d} days</button>`)}</span>
    <span role="status" class="hint">${error ? "" : data && data.days === days ? `since ${data.since} (UTC)` : "loading…"}</span>
  </div>`;
}

const keyed = (rows, key) => rows.map((row) => ({ ...row, key: row[key] }));

function Report({ data, total }) {
  const attributed = sum(data.session);
  const unknown = data.profile.find((r) => r.unknown_profile);
  const tried = (t) => t.requests + t.errors;
  const label =
    `Chart of input tokens, output tokens and cost per day over the last ${data.days} days: ` +
    `${n(total.requests)} requests, ${n(total.input_tokens)} input tokens, ${n(total.output_tokens)} output tokens, ` +
    `${money(total.cost_usd)}. The tables below give the numbers.`;
  return html`
    <${Totals} total=${total} />
    <p class="hint">Cost counts only requests whose profile has <code>prices</code> for the model.</p>
    <${Chart} data=${data} label=${label} />
    <details class="usage-days"><summary>Per day (table)</summary>
      <${Table} caption="Per day (UTC)" first="Day" kind="day" rows=${keyed([...data.day].reverse(), "day")} name=${(r) => r.day} empty="" />
    </details>
    <${Table} caption="Per session" first="Session" kind="session" rows=${keyed(data.session, "session_id")}
      name=${sessionName} empty="No request came from a session svc hosts." />
    ${
      tried(attributed) < tried(total)
        ? html`<p class="hint">${n(tried(total) - tried(attributed))} of ${n(tried(total))} requests came from outside svc's sessions.</p>`
        : null
    }
    <${Table} caption="Per profile" first="Profile" kind="profile" rows=${keyed(
      data.profile.filter((r) => !r.unknown_profile),
      "profile_id",
    )}
      name=${(r) => r.profile_id} empty="No request used a profile of settings.json." />
    ${unknown ? html`<p class="hint usage-unknown-profiles">${n(tried(unknown))} ${tried(unknown) === 1 ? "request" : "requests"} named a profile settings.json does not have (refused, counted as failed).</p>` : null}
    <${Table} caption="Per model" first="Model" kind="model" rows=${keyed(
      data.model.filter((r) => r.model || r.requests),
      "model",
    )}
      name=${(r) => r.model || html`<span class="hint">unknown model</span>`} empty="No request named a model." />`;
}

export function Usage() {
  const [days, setDays] = useState(() => {
    const asked = Number(hashParams().get("days"));
    return RANGES.includes(asked) ? asked : 30;
  });
  const { data, error } = useUsage(days);
  const picker = html`<${Picker} days=${days} setDays=${setDays} data=${data} error=${error} />`;
  if (error) return html`${picker}<p class="usage-error notice notice-bad" role="alert">Usage could not be loaded: ${error}</p>`;
  if (!data) return picker;
  const total = sum(data.day);
  if (!total.requests && !total.errors) {
    return html`${picker}<p class="hint usage-empty">No model requests went through svc's bridge in the last ${data.days} days.</p>`;
  }
  return html`${picker}<${Report} data=${data} total=${total} />`;
}

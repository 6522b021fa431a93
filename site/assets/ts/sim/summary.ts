// The summary table: variants side by side, one row per measure; in a real
// run each cell is the measurement with the model's prediction and the
// error beside it. Below it, the expectations the page's text states.
import { el } from "./canvas";
import type { BlockChartKind } from "./chart";
import type { VariantData } from "./store";
import type { Check, PhaseRow, Summary } from "./types";
import { t, metric, num } from "./i18n";

// summaryChart is the summary table and the expectations, beside the
// distribution; redrawn only when a summary or the checks changed.
export const summaryChart: BlockChartKind = {
  make() {
    const summary = el("div", "sim-summary");
    const checks = el("div", "sim-checks-box");
    const box = el("div", "sim-box");
    box.append(el("p", "sim-section", t("w_summary")), summary, checks);
    return {
      nodes: [box],
      render(f) {
        if (!f.changed) return;
        renderSummary(summary, f.vs, f.real, "");
        renderChecks(checks, f.checks);
      },
    };
  },
};

interface Row { key: string; label: string; always?: boolean }

const ROWS: Row[] = [
  { key: "total_ms.p50", label: "m_total_p50", always: true },
  { key: "total_ms.p90", label: "m_total_p90", always: true },
  { key: "total_ms.p99", label: "m_total_p99" },
  { key: "connect_ms.p50", label: "m_connect_p50" },
  { key: "appconnect_ms.p50", label: "m_appconnect_p50" },
  { key: "requests", label: "m_requests" },
  { key: "calls", label: "m_calls", always: true },
  { key: "connects", label: "m_connects", always: true },
  { key: "reused", label: "m_reused", always: true },
  { key: "errors", label: "m_errors" },
  { key: "port_errors", label: "m_port_errors" },
  { key: "races", label: "m_races" },
  { key: "open_peak", label: "m_open_peak" },
  { key: "time_wait_peak", label: "m_time_wait_peak" },
  { key: "server_time_wait_peak", label: "m_server_time_wait_peak" },
  { key: "first_port_error_s", label: "m_first_port_error_s" },
  { key: "recovered_s", label: "m_recovered_s" },
  { key: "throughput_rps", label: "m_throughput_rps", always: true },
];

export function value(s: Summary | null | undefined, key: string): unknown {
  let cur: unknown = s;
  for (const k of key.split(".")) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<string, unknown>)[k];
  }
  return cur;
}

function interesting(vs: VariantData[], r: Row): boolean {
  if (r.always) return true;
  for (const d of vs) {
    const v = value(d.summary, r.key);
    if (r.key === "requests") {
      if (typeof v === "number" && d.summary && v !== d.summary.calls) return true;
      continue;
    }
    if (r.key.startsWith("connect_ms") || r.key.startsWith("appconnect_ms")) continue;
    if (typeof v === "number" && v !== 0) return true;
  }
  return false;
}

// renderSummary fills root with the table for vs; real adds the model column.
export function renderSummary(root: HTMLElement, vs: VariantData[], real: boolean, caption: string): void {
  const table = el("table", "sim-table");
  if (caption) table.append(el("caption", "", caption));
  const head = el("tr");
  head.append(el("th"));
  for (const d of vs) {
    const th = el("th");
    th.append(...breakable(d.label));
    th.scope = "col";
    head.append(th);
  }
  table.createTHead().append(head);
  const body = table.createTBody();
  const row = (cls: string, label: string, cell: (d: VariantData) => HTMLElement) => {
    const tr = el("tr", cls);
    const th = el("th", "", label);
    th.scope = "row";
    tr.append(th);
    for (const d of vs) tr.append(cell(d));
    body.append(tr);
  };
  // What ran, in a real run: PHP's version, its libcurl and TLS library.
  if (real && vs.some((d) => d.runtime?.name)) {
    row("runtime", t("w_runtime"), (d) => el("td", d.runtime?.stand_in ? "bad" : "", d.runtime?.name || "–"));
  }
  if (vs.some((d) => d.error)) {
    // A variant the software refused: in a real run, its own words beside the model's.
    row("refused", t("m_variant_error"), (d) => {
      const td = el("td", d.error ? "bad" : "", d.error || "–");
      if (real && d.modelError) {
        td.replaceChildren(el("span", "v real-error", d.error || "–"), el("span", "model model-error", t("w_model") + " " + d.modelError));
      }
      return td;
    });
  }
  if (real) {
    const ids = [...new Set(vs.flatMap((d) => Object.keys(d.checks || {})))].sort();
    for (const id of ids) row("check", "check." + id, (d) => el("td", "", d.checks?.[id] ?? "–"));
  }
  for (const r of ROWS) {
    if (!interesting(vs, r)) continue;
    const tr = el("tr");
    tr.dataset.metric = r.key;
    const th = el("th", "", t(r.label));
    th.scope = "row";
    tr.append(th);
    for (const d of vs) {
      const td = el("td");
      const v = value(d.summary, r.key);
      td.dataset.variant = d.name;
      if (typeof v === "number") td.dataset.value = String(v);
      td.append(el("span", "v", d.summary ? metric(r.key, v) : "–"));
      if (real && d.model) {
        const m = value(d.model, r.key);
        if (typeof m === "number") {
          td.append(el("span", "model", t("w_model") + " " + metric(r.key, m)));
          if (typeof v === "number" && m !== 0) {
            const e = ((v - m) / Math.abs(m)) * 100;
            td.append(el("span", Math.abs(e) > 25 ? "err bad" : "err", (e >= 0 ? "+" : "") + num(e, 0) + "%"));
          }
        }
      }
      tr.append(td);
    }
    body.append(tr);
  }
  root.replaceChildren(table);
  const rows = vs.flatMap((d) => (d.compare || []).map((p) => ({ d, p })));
  if (rows.length) root.append(compareTable(rows));
  // A comparison that missed on a busy machine judges the machine, not the
  // model: say so in words, as sim validate does.
  for (const d of vs) {
    if (d.verdict !== "inconclusive") continue;
    const p = el("p", "sim-inconclusive");
    p.textContent = d.busyCPUs > 0 ? t("w_inconclusive", { label: d.label, cpus: num(d.busyCPUs, 2) }) : t("w_inconclusive_lag", { label: d.label });
    root.append(p);
  }
}

// breakable is a label as text with a line-break opportunity after each
// underscore of a word longer than ten characters, so that an identifier
// such as curl_share_init_persistent() can wrap in a narrow column instead
// of widening the table; a column wide enough keeps it whole.
function breakable(label: string): Node[] {
  const out: Node[] = [];
  for (const word of label.split(/(?<=\s)/)) {
    const parts = word.length > 10 ? word.split(/(?<=_)/) : [word];
    parts.forEach((part, i) => {
      if (i > 0) out.push(el("wbr"));
      out.push(document.createTextNode(part));
    });
  }
  return out;
}

function compareTable(rows: { d: VariantData; p: PhaseRow }[]): HTMLElement {
  const table = el("table", "sim-table sim-compare");
  table.append(el("caption", "", t("w_model") + " / " + t("w_measured")));
  const overhead = Math.max(0, ...rows.map(({ d }) => d.overhead));
  if (overhead > 0) table.caption!.append(el("span", "sim-overhead", " · " + t("w_overhead", { ms: num(overhead, 2) })));
  const head = el("tr");
  for (const h of [t("w_variants"), "", t("w_model"), t("w_measured"), t("w_error"), ""]) head.append(el("th", "", h));
  table.createTHead().append(head);
  const body = table.createTBody();
  for (const { d, p } of rows) {
    const tr = el("tr", p.ok ? "" : "bad");
    tr.append(el("td", "", d.label), el("td", "", p.phase), el("td", "", metric("x_ms", p.model_ms)),
      el("td", "", metric("x_ms", p.measured_ms)), el("td", "", (p.error_pct >= 0 ? "+" : "") + num(p.error_pct, 0) + "%"),
      el("td", "mark", p.note ? "·" : p.ok ? "✓" : "✗"));
    if (p.note) tr.title = p.note;
    else if (p.one_call_ms) tr.title = t("w_one_call", { ms: num(p.one_call_ms, 2) });
    body.append(tr);
  }
  return table;
}

export function renderChecks(root: HTMLElement, checks: Check[] | null | undefined): void {
  root.replaceChildren();
  if (!checks || !checks.length) {
    root.hidden = true;
    return;
  }
  root.hidden = false;
  root.append(el("p", "sim-checks-title", t("w_checks")));
  const ul = el("ul", "sim-checks");
  for (const c of checks) {
    const li = el("li", c.ok ? "ok" : "fail");
    li.append(el("span", "mark", c.ok ? "✓" : "✗"), " ", el("code", "", c.expect), " ", el("span", "got", c.got));
    ul.append(li);
  }
  root.append(ul);
}

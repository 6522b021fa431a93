// The calls table: each variant's calls as rows of numbers (the
// waterfall's, readable and copyable), under the charts in a <details>. It
// is built when opened and when a run ends while it is open: thousands of
// rows are costly DOM.
import { el } from "./canvas";
import type { BlockChartKind } from "./chart";
import { int, ms, t } from "./i18n";
import { PHASES } from "./schema.gen";
import type { VariantData } from "./store";

const TABLE_ROWS = 500; // calls listed per variant in the table

// The phases curl reports (time_namelookup …): the table's columns.
const CURL = PHASES.flatMap((p, i) => (p.curl ? [i] : []));

export const callsChart: BlockChartKind = {
  make({ variants }) {
    const root = el("details", "sim-calls");
    let stale = true; // the table does not show the last run yet
    const fill = () => {
      stale = false;
      renderCalls(root, variants());
    };
    root.append(el("summary", "", t("w_calls_table")));
    root.addEventListener("toggle", () => {
      if (root.open && stale) fill();
    });
    return {
      nodes: [root],
      below: true,
      render() {},
      started() {
        fill(); // empties the tables until this run is done
        stale = true;
      },
      done() {
        stale = true;
        if (root.open) fill();
      },
    };
  },
};

// renderCalls lists the calls of each variant of vs in root, after its
// <summary>.
function renderCalls(root: HTMLDetailsElement, vs: VariantData[]): void {
  const keep = root.querySelector("summary")!;
  root.replaceChildren(keep);
  for (const d of vs) {
    if (!d.calls.length) continue;
    const table = el("table", "sim-table sim-calls-table");
    table.dataset.variant = d.name;
    const shown = Math.min(d.calls.length, TABLE_ROWS);
    table.append(el("caption", "", d.label + " · " + int(shown) + (shown < d.calls.length ? " / " + int(d.calls.length) : "") + " " + t("m_calls")));
    const head = el("tr");
    for (const h of ["#", t("w_col_worker"), t("w_col_conn"), "num_connects", ...CURL.map((i) => PHASES[i].curl!), ""]) head.append(el("th", "", h));
    table.createTHead().append(head);
    const body = table.createTBody();
    for (let i = 0; i < shown; i++) {
      const c = d.calls[i];
      const tr = el("tr", c.error ? "bad" : c.newConn ? "new" : "");
      tr.dataset.req = String(c.req);
      tr.dataset.call = String(c.call);
      tr.dataset.conn = String(c.conn);
      tr.dataset.new = c.newConn ? "1" : "0";
      tr.dataset.total = String(c.total);
      const cells = [c.req + (c.call > 1 ? "." + c.call : ""), String(c.worker || ""), c.conn ? "c" + c.conn : "", c.newConn ? "1" : "0",
        ...CURL.map((i) => ms(c.t[i])), c.error || (c.retried ? t("w_retried") : "")];
      for (const s of cells) tr.append(el("td", "", s));
      body.append(tr);
    }
    root.append(table);
  }
}

// Links that reproduce a run: a block's state is in the page's query, one
// parameter per changed scenario key and its seed, each named after the
// block:
//
//   /labs/idle-timeouts/?idle.pause=60s&idle.seed=3#sim-idle
//
// Opening such a link sets the block's controls and runs it. `sim run
// LINK` runs the same state in a terminal and `sim run --link` prints it
// (sim/cli/link.go reads and writes this form).

export interface LinkState { params: Record<string, string>; seed: number }

// parseLinks reads every block's state from a query string.
export function parseLinks(search: string): Map<string, LinkState> {
  const out = new Map<string, LinkState>();
  for (const [name, value] of new URLSearchParams(search)) {
    const dot = name.indexOf(".");
    if (dot <= 0) continue;
    const block = name.slice(0, dot);
    const key = name.slice(dot + 1);
    if (!/^[A-Za-z0-9_-]+$/.test(block) || !/^[a-z][a-z0-9_]*$/.test(key)) continue;
    let st = out.get(block);
    if (!st) out.set(block, (st = { params: {}, seed: 1 }));
    if (key === "seed") {
      const n = Number(value);
      if (Number.isSafeInteger(n) && n >= 0) st.seed = n;
    } else {
      st.params[key] = value;
    }
  }
  return out;
}

function enc(s: string): string {
  return encodeURIComponent(s).replace(/%2C/g, ",").replace(/%3A/g, ":").replace(/%2F/g, "/");
}

// blockQuery is one block's part of the query: its changed keys, then its
// seed (always: the seed marks the block as one to run).
export function blockQuery(block: string, params: Record<string, unknown>, seed: number): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(params)) parts.push(block + "." + k + "=" + enc(typeof v === "string" ? v : JSON.stringify(v)));
  parts.push(block + ".seed=" + seed);
  return parts.join("&");
}

// withBlock is the query search with block's state replaced by q (other
// blocks' states and other parameters kept).
export function withBlock(search: string, block: string, q: string): string {
  const keep = search.replace(/^\?/, "").split("&").filter((p) => p && !p.startsWith(block + "."));
  if (q) keep.push(q);
  return keep.length ? "?" + keep.join("&") : "";
}

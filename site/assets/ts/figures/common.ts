// What the page's figures (figures.ts) share: their strings' fill-ins,
// elements, numbers in the page's language, and a ```sim block's data.
export type Strings = Record<string, string>;

// fill puts vars into s's {name} places.
export function fill(s: string, vars: Record<string, string | number>): string {
  for (const k in vars) s = s.split("{" + k + "}").join(String(vars[k]));
  return s;
}

export function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls = "", text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

const SVG = "http://www.w3.org/2000/svg";

export function svg(tag: string, attrs: Record<string, string | number>, text?: string): SVGElement {
  const e = document.createElementNS(SVG, tag);
  for (const k in attrs) e.setAttribute(k, String(attrs[k]));
  if (text !== undefined) e.textContent = text;
  return e;
}

const lang = document.documentElement.lang || "en";
export const nf = new Intl.NumberFormat(lang, { maximumFractionDigits: 1 });
export const nf0 = new Intl.NumberFormat(lang, { maximumFractionDigits: 0 });

// blockData reads the sim widget's data of a block of this page (the JSON
// the render hook writes), or null.
export function blockData(block: string): Record<string, any> | null {
  const s = document.querySelector(`#sim-${CSS.escape(block)} script.sim-data`);
  if (!s) return null;
  try {
    return JSON.parse(s.textContent || "");
  } catch {
    return null;
  }
}

// ms reads a duration of a scenario key ("40ms", "1.5s", 40) in ms.
export function ms(v: unknown): number {
  if (typeof v === "number") return v;
  const m = /^([0-9.]+)\s*(ms|s|µs|us)?$/.exec(String(v ?? "").trim());
  if (!m) return 0;
  const f = Number(m[1]);
  return m[2] === "s" ? f * 1000 : m[2] === "µs" || m[2] === "us" ? f / 1000 : f;
}

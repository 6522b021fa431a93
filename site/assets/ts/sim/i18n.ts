// UI strings (from the page's #connlab-i18n, written by the base template
// from sim/i18n/*.toml) and number formatting in the page's language.

let strings: Record<string, string> = {};

export function loadStrings(doc: Document): void {
  const el = doc.getElementById("connlab-i18n");
  if (!el) return;
  try {
    strings = JSON.parse(el.textContent || "{}");
  } catch {
    strings = {};
  }
}

// t returns the string for key, with {name} placeholders filled in.
export function t(key: string, vars?: Record<string, string | number>): string {
  let s = strings[key] ?? key;
  if (vars) for (const k in vars) s = s.split("{" + k + "}").join(String(vars[k]));
  return s;
}

const lang = (typeof document !== "undefined" && document.documentElement.lang) || "en";
const formats = new Map<number, Intl.NumberFormat>();

function nf(digits: number): Intl.NumberFormat {
  let f = formats.get(digits);
  if (!f) {
    f = new Intl.NumberFormat(lang, { maximumFractionDigits: digits, minimumFractionDigits: 0 });
    formats.set(digits, f);
  }
  return f;
}

// num formats v the way the pages' text does (partials/fmt-number.html):
// no decimals from 10 up, one below 10, two below 1, trailing zeros dropped.
export function num(v: number, digits?: number): string {
  if (!isFinite(v)) return "–";
  const a = Math.abs(v);
  const d = digits ?? (a >= 10 ? 0 : a >= 1 ? 1 : 2);
  return nf(d).format(v);
}

// int formats a count with digit grouping.
export function int(v: number): string {
  return nf(0).format(v);
}

// metric formats a summary value with the unit its name carries.
export function metric(name: string, v: unknown): string {
  if (v === null || v === undefined) return "–";
  if (Array.isArray(v)) return "[" + v.map((x) => num(Number(x))).join(", ") + "]";
  if (typeof v !== "number") return String(v);
  const base = name.split(".")[0];
  if (base.endsWith("_ms")) return t("fmt_ms", { n: num(v) });
  if (base.endsWith("_rps")) return t("fmt_rps", { n: num(v) });
  if (base.endsWith("_s")) return t("fmt_s", { n: num(v) });
  return Number.isInteger(v) ? int(v) : num(v);
}

// ms formats a time in milliseconds for a tooltip: more precision than prose,
// since loopback phases are fractions of a millisecond.
export function ms(v: number): string {
  const a = Math.abs(v);
  return t("fmt_ms", { n: num(v, a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3) });
}

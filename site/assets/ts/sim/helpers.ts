// Helpers whose Go twins the page must agree with, held to the same cases
// (sim/testdata/helpers.json; site/helpers_ts_test.go runs them here):
// durations as Go's time.ParseDuration reads them and sim.FormatDuration
// writes them, a student's number as sim/lab.ParseNumber reads it, and a
// command's word quoted as sim/lab.ShellQuote quotes it. No DOM here.

const NS: Record<string, number> = { ns: 1, us: 1e3, "µs": 1e3, "μs": 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 };

// parseDuration reads a Go duration ("12ms", "1m30s", "-1.5h", "0") as
// milliseconds, as time.ParseDuration reads it (in whole nanoseconds); NaN
// when it is not one.
export function parseDuration(text: string): number {
  let s = text;
  let neg = false;
  if (s !== "" && (s[0] === "-" || s[0] === "+")) {
    neg = s[0] === "-";
    s = s.slice(1);
  }
  if (s === "0") return 0;
  if (s === "") return NaN;
  let ns = 0;
  while (s !== "") {
    const m = /^([0-9]*)(?:\.([0-9]*))?([^0-9.]*)/.exec(s)!;
    const [all, whole, frac = "", unit] = m;
    if ((whole === "" && frac === "") || unit === "" || !(unit in NS)) return NaN;
    const u = NS[unit];
    ns += Number(whole || "0") * u;
    if (frac !== "") ns += Math.trunc(Number(frac) * (u / Math.pow(10, frac.length)));
    s = s.slice(all.length);
  }
  return (neg ? -ns : ns) / 1e6;
}

// formatDuration writes ms as sim.FormatDuration writes a duration (the way
// a lab writes one): "75s", "12ms", "1.5ms", "250µs", "1h".
export function formatDuration(ms: number): string {
  const ns = Math.round(ms * 1e6);
  if (ns === 0) return "0s";
  if (ns % 3600e9 === 0) return ns / 3600e9 + "h";
  if (ns >= 1e9 && ns % 1e6 === 0) return String(Math.trunc(ns / 1e9) + (ns % 1e9) / 1e9) + "s";
  if (ns >= 1e6 && ns % 1e3 === 0) return String(ns / 1e6) + "ms";
  return goString(ns);
}

// goString is Go's time.Duration.String of ns nanoseconds: "1.5µs",
// "1m1.0000005s".
function goString(ns: number): string {
  const neg = ns < 0;
  let u = Math.abs(ns);
  const frac = (v: number, prec: number): [string, number] => {
    let digits = "";
    let print = false;
    for (let i = 0; i < prec; i++) {
      const d = v % 10;
      print = print || d !== 0;
      if (print) digits = d + digits;
      v = Math.floor(v / 10);
    }
    return [print ? "." + digits : "", v];
  };
  let out: string;
  if (u < 1e9) {
    const [unit, prec] = u < 1e3 ? ["ns", 0] : u < 1e6 ? ["µs", 3] : ["ms", 6];
    const [f, v] = frac(u, prec as number);
    out = v + f + unit;
  } else {
    const [f, secs] = frac(u, 9);
    u = secs;
    out = (u % 60) + f + "s";
    u = Math.floor(u / 60);
    if (u > 0) {
      out = (u % 60) + "m" + out;
      u = Math.floor(u / 60);
      if (u > 0) out = u + "h" + out;
    }
  }
  return neg ? "-" + out : out;
}

// parseNumber reads a prediction as sim/lab.ParseNumber does: "22", "22 ms",
// "~22", "28,232", "1_000"; null when it is not a number (in unit).
export function parseNumber(raw: string, unit: string): number | null {
  let s = raw.trim();
  for (const p of ["≈", "~", "약"]) if (s.startsWith(p)) s = s.slice(p.length).trim();
  if (unit && s.endsWith(unit)) s = s.slice(0, -unit.length).trim();
  s = s.split("_").join("");
  if (/^-?\d{1,3}(,\d{3})+(\.\d+)?$/.test(s)) s = s.split(",").join("");
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(s)) return null;
  const f = Number(s);
  return isFinite(f) ? f : null;
}

// shellQuote quotes a word of a command for a POSIX shell when it needs it,
// as sim/lab.ShellQuote does: ASCII letters and digits, -_=./:,+@% and
// non-ASCII characters stay as they are, anything else goes in single
// quotes.
export function shellQuote(s: string): string {
  return /^[A-Za-z0-9\-_=./:,+@%\u0080-\u{10FFFF}]+$/u.test(s) ? s : "'" + s.replace(/'/g, "'\\''") + "'";
}

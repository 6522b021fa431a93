// Controls for a block's own scenario keys (those its variants do not set):
// a slider over round values around the block's value, with a text field
// for any exact value; selects for enums; a checkbox for booleans. Limits,
// units and help come from `sim params --json` (site/data/params.json).
import { el } from "./canvas";
import { formatDuration, parseDuration } from "./helpers";
import type { Control } from "./types";
import { t } from "./i18n";

function toNumber(c: Control, v: unknown): number {
  if (c.kind === "duration") return typeof v === "number" ? v : parseDuration(String(v));
  return typeof v === "number" ? v : parseFloat(String(v));
}

// stops are the slider's positions: 1-2-5 steps from a hundredth to a
// hundred times the block's value, within the key's limits, with 0 and the
// block's own value included.
export function stops(c: Control): number[] {
  const min = toNumber(c, c.min ?? "0");
  const max = toNumber(c, c.max ?? "1e9");
  const val = toNumber(c, c.value);
  if (c.kind === "int" && max - min <= 30) {
    const out: number[] = [];
    for (let v = min; v <= max; v++) out.push(v);
    return out;
  }
  const def = toNumber(c, c.default);
  const base = val > 0 ? val : def > 0 ? def : c.kind === "duration" ? 10 : 1;
  const lo = Math.max(min, base / 100, c.kind === "int" ? 1 : 0);
  const hi = Math.min(max, base * 100);
  const set = new Set<number>();
  if (min <= 0) set.add(0);
  for (let p = Math.pow(10, Math.floor(Math.log10(lo || 1e-3))); p <= hi * 10; p *= 10) {
    for (const f of [1, 2, 5]) {
      const v = +(p * f).toPrecision(6);
      if (v >= lo && v <= hi && (c.kind !== "int" || Number.isInteger(v))) set.add(v);
    }
  }
  if (isFinite(val)) set.add(val);
  return [...set].sort((a, b) => a - b);
}

export class Field {
  root = el("div", "sim-field");
  private input: HTMLInputElement | HTMLSelectElement;
  private slider: HTMLInputElement | null = null;
  private stops: number[] = [];
  readonly initial: unknown;

  constructor(public c: Control, uid: string, onChange: () => void) {
    this.initial = c.value;
    const id = uid + "-" + c.key;
    const label = el("label", "sim-label");
    label.htmlFor = id;
    label.append(el("code", "", c.key));
    if (c.unit) label.append(el("span", "unit", " " + c.unit));
    label.title = c.help;
    this.root.title = c.help;
    this.root.append(label);
    if (c.kind === "enum" && c.enum) {
      const sel = el("select");
      for (const o of c.enum) sel.append(new Option(o, o));
      sel.value = String(c.value);
      this.input = sel;
    } else if (c.kind === "bool") {
      const cb = el("input");
      cb.type = "checkbox";
      cb.checked = c.value === true || c.value === "true";
      this.input = cb;
    } else {
      const tx = el("input", "sim-text");
      tx.type = "text";
      tx.spellcheck = false;
      tx.autocomplete = "off";
      tx.value = this.show(c.value);
      this.input = tx;
      if (c.kind === "duration" || c.kind === "int" || c.kind === "float") {
        this.stops = stops(c);
        const sl = el("input", "sim-slider");
        sl.type = "range";
        sl.min = "0";
        sl.max = String(this.stops.length - 1);
        sl.step = "1";
        sl.setAttribute("aria-label", c.key);
        this.slider = sl;
        this.syncSlider();
        sl.addEventListener("input", () => {
          const v = this.stops[+sl.value];
          tx.value = c.kind === "duration" ? formatDuration(v) : String(v);
          this.validate();
          onChange();
        });
        tx.addEventListener("change", () => this.syncSlider());
      }
    }
    this.input.id = id;
    this.input.addEventListener("change", () => {
      this.validate();
      onChange();
    });
    const row = el("div", "sim-input");
    if (this.slider) row.append(this.slider);
    row.append(this.input);
    this.root.append(row);
  }

  private show(v: unknown): string {
    if (this.c.kind === "duration" && typeof v === "number") return formatDuration(v);
    return String(v);
  }

  private syncSlider(): void {
    if (!this.slider) return;
    const v = toNumber(this.c, (this.input as HTMLInputElement).value);
    let best = 0;
    for (let i = 0; i < this.stops.length; i++) if (Math.abs(this.stops[i] - v) < Math.abs(this.stops[best] - v)) best = i;
    this.slider.value = String(best);
  }

  // value is the control's value as a run message's params carry it.
  value(): unknown {
    const i = this.input;
    if (this.c.kind === "bool") return (i as HTMLInputElement).checked;
    if (this.c.kind === "int" || this.c.kind === "float") {
      const n = Number(i.value);
      return isFinite(n) && i.value.trim() !== "" ? n : i.value;
    }
    return i.value.trim();
  }

  changed(): boolean {
    const a = this.value();
    const b = this.initial;
    if (this.c.kind === "duration") return parseDuration(String(a)) !== toNumber(this.c, b);
    if (this.c.kind === "int" || this.c.kind === "float") return Number(a) !== Number(b);
    if (this.c.kind === "bool") return a !== (b === true || b === "true");
    return String(a) !== String(b);
  }

  set(v: unknown): void {
    const i = this.input;
    // A value that is none of a select's options (from a link) is kept as
    // one, so the run sends it and the model's refusal names it.
    if (i instanceof HTMLSelectElement && ![...i.options].some((o) => o.value === String(v))) i.append(new Option(String(v), String(v)));
    if (this.c.kind === "bool") (i as HTMLInputElement).checked = v === true || v === "true";
    else i.value = this.show(v);
    this.syncSlider();
    this.validate();
  }

  reset(): void {
    this.set(this.initial);
    this.mark("");
  }

  // validate checks the value against the key's limits here, so most
  // mistakes show before a run; the server checks again.
  validate(): boolean {
    const c = this.c;
    const v = this.value();
    let msg = "";
    if (c.kind === "duration" || c.kind === "int" || c.kind === "float") {
      const n = c.kind === "duration" ? parseDuration(String(v)) : Number(v);
      const lo = toNumber(c, c.min ?? "-1e300");
      const hi = toNumber(c, c.max ?? "1e300");
      if (!isFinite(n)) msg = c.kind === "duration" ? c.key + ": 12ms, 1.5s, 2m…" : c.key + ": a number";
      else if (c.kind === "int" && !Number.isInteger(n)) msg = c.key + ": a whole number";
      else if (n < lo || n > hi) msg = c.key + ": " + (c.min ?? "") + " … " + (c.max ?? "");
    } else if (c.kind === "enum" && c.enum && !c.enum.includes(String(v))) {
      msg = c.key + ": " + c.enum.join(", ");
    }
    this.mark(msg);
    return msg === "";
  }

  mark(msg: string): void {
    this.root.classList.toggle("invalid", msg !== "");
    this.input.setAttribute("aria-invalid", msg ? "true" : "false");
    this.input.title = msg || this.c.help;
  }
}

export class Controls {
  root = el("div", "sim-controls");
  fields: Field[] = [];
  private seed: HTMLInputElement;
  extra: Record<string, unknown> = {};

  constructor(cs: Control[], uid: string, onChange: () => void) {
    for (const c of cs) {
      const f = new Field(c, uid, onChange);
      this.fields.push(f);
      this.root.append(f.root);
    }
    const sf = el("div", "sim-field sim-seed");
    const lab = el("label", "sim-label");
    lab.htmlFor = uid + "-seed";
    lab.append(el("code", "", "seed"));
    lab.title = t("w_seed");
    this.seed = el("input", "sim-text");
    this.seed.type = "number";
    this.seed.min = "0";
    this.seed.value = "1";
    this.seed.id = uid + "-seed";
    this.seed.addEventListener("change", onChange);
    const row = el("div", "sim-input");
    row.append(this.seed);
    sf.append(lab, row);
    this.root.append(sf);
  }

  // params are the values that differ from the block's, plus any set from
  // outside (connlab:run) for keys without a control.
  params(): Record<string, unknown> {
    const p: Record<string, unknown> = { ...this.extra };
    for (const f of this.fields) if (f.changed()) p[f.c.key] = f.value();
    return p;
  }

  setSeed(n: number): void {
    this.seed.value = String(n);
  }

  seedValue(): number | undefined {
    const n = parseInt(this.seed.value, 10);
    return isFinite(n) && n !== 1 ? n : undefined;
  }

  valid(): boolean {
    let ok = true;
    for (const f of this.fields) ok = f.validate() && ok;
    return ok;
  }

  set(p: Record<string, unknown>): void {
    for (const [k, v] of Object.entries(p)) {
      const f = this.fields.find((f) => f.c.key === k);
      if (f) f.set(v);
      else this.extra[k] = v;
    }
  }

  reset(): void {
    for (const f of this.fields) f.reset();
    this.extra = {};
    this.seed.value = "1";
  }

  // mark shows a server error on the control it names.
  mark(field: string, msg: string): boolean {
    const f = this.fields.find((f) => f.c.key === field);
    if (f) f.mark(msg);
    return !!f;
  }

  clearMarks(): void {
    for (const f of this.fields) f.mark("");
  }
}

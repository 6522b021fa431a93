// The exercises' words and elements: the strings the toolbar passes
// (layouts/_partials/exercise-strings.html, read once by the page), and the
// exercise format's only markup, `code` spans.
type Strings = Record<string, string>;

let S: Strings = {};

// loadStrings reads the strings of the page's exercise toolbar.
export function loadStrings(toolbar: Element | null): void {
  const strings = toolbar?.querySelector(".ex-strings");
  try {
    S = JSON.parse(strings?.textContent || "{}");
  } catch {
    S = {};
  }
}

export function t(key: string, vars: Record<string, string | number> = {}): string {
  let s = S[key] ?? key;
  for (const [k, v] of Object.entries(vars)) s = s.split("{" + k + "}").join(String(v));
  return s;
}

export function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls = "", text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// rich renders an exercise text: plain text with `code` spans, the only
// markup the exercise format uses. Never innerHTML.
export function rich(parent: HTMLElement, s: string): HTMLElement {
  parent.replaceChildren();
  String(s ?? "")
    .split("`")
    .forEach((part, i) => parent.append(i % 2 ? el("code", "", part) : document.createTextNode(part)));
  return parent;
}

// Key points of an explanation: sim/lab/exercise_rubric.go in the page (the
// browser test holds it to Go's cases, sim/lab/testdata/rubric.json).
import type { RubricPoint } from "../sim/schema.gen";

// normalizeAnswer lower-cases s and folds the punctuation between words
// into single spaces; letters, digits and _ . - : % stay.
export function normalizeAnswer(s: string): string {
  let out = "";
  let space = true;
  for (const ch of s.toLowerCase()) {
    if (/[\p{L}\p{N}_.\-:%]/u.test(ch)) {
      out += ch;
      space = false;
    } else if (!space) {
      out += " ";
      space = true;
    }
  }
  return out.trim();
}

const asciiAlnum = (c: string) => /^[A-Za-z0-9]$/.test(c);

// mentions reports whether the normalized text names the phrase: at a word
// start for an ASCII word or number, ending where the phrase does for a
// number or a word of up to three letters (Go's mentions, the same rules).
export function mentions(text: string, phrase: string): boolean {
  const p = normalizeAnswer(phrase);
  if (!p) return false;
  const chars = [...p];
  const first = chars[0], last = chars[chars.length - 1];
  const tail = (/[A-Za-z]*$/.exec(p) || [""])[0].length;
  for (let at = text.indexOf(p); at >= 0; at = text.indexOf(p, at + 1)) {
    const before = at > 0 ? [...text.slice(0, at)].pop() || "" : "";
    const after = [...text.slice(at + p.length)][0] || "";
    const okStart = at === 0 || !asciiAlnum(first) || !asciiAlnum(before);
    const okEnd = after === "" || ((!/[0-9]/.test(last) || !/[0-9]/.test(after)) && (tail === 0 || tail > 3 || !asciiAlnum(after)));
    if (okStart && okEnd) return true;
  }
  return false;
}

export function gradeRubric(answer: string, rubric: RubricPoint[]): boolean[] {
  const text = normalizeAnswer(answer);
  return rubric.map((p) => p.any.some((w) => mentions(text, w)));
}

// A student's progress on each exercise, kept in this browser
// (localStorage, kept.ts) by language, lab and exercise.
import { keep, loadKept } from "../kept";

export interface Progress {
  state: "" | "right" | "shown" | "sent";
  tries: number;
  value: string;
  seed: number;
}

const STORE = "connlab:exercises:v1";

export const loadAll = () => loadKept<Progress>(STORE);
export const saveOne = (key: string, p: Progress | null) => keep(STORE, key, p);

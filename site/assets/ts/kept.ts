// What a page keeps in this browser (localStorage) under one key: a record
// by id, read whole and written one entry at a time. In private mode or
// with the storage full nothing is kept, and the page works without it.

export function loadKept<T>(store: string): Record<string, T> {
  try {
    const v = JSON.parse(localStorage.getItem(store) || "{}");
    return v && typeof v === "object" ? v : {};
  } catch {
    return {};
  }
}

// keep sets the entry key of store to v, or removes it (v null).
export function keep<T>(store: string, key: string, v: T | null): void {
  try {
    const all = loadKept<T>(store);
    if (v) all[key] = v;
    else delete all[key];
    localStorage.setItem(store, JSON.stringify(all));
  } catch {
    /* private mode or full: not kept */
  }
}

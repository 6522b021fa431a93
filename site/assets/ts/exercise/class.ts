// The class client: in class mode (sim serve --class) the student joins
// the teacher's class with a display name over /class/ws; predictions go
// to the teacher, and the answers come when the teacher reveals them.
// Whether the server is in class mode is its /class/info (classInfo).
import type { Host } from "../model/client";
import type { Instance } from "../sim/schema.gen";
import type { Exercise } from "./exercise";
import { t } from "./text";

interface ClassInfo {
  class: boolean;
  per_student: boolean;
}

// classInfo asks the server that served the page whether it runs a class.
// Only a server in class mode has /class/info (its probe says so): asking
// another one logged a 404 in the console of every lab page.
export async function classInfo(h: Host): Promise<ClassInfo | null> {
  if (!h.server || !h.class) return null;
  try {
    const r = await fetch("/class/info", { headers: { Accept: "application/json" } });
    if (r.ok) return (await r.json()) as ClassInfo;
  } catch {
    return null;
  }
  return null;
}

// ClassPage is what the class client needs of the page (exercises.ts).
export interface ClassPage {
  readonly exercises: Exercise[];
  readonly lang: string;
  readonly seed: number;
  find(lab: string, id: string): Exercise | undefined;
  loadSeed(seed: number, hidden: boolean): Promise<boolean>;
}

export class ClassClient {
  private ws: WebSocket | null = null;
  private retry = 500;
  private name = "";
  private token = "";
  joined = false;

  constructor(
    private readonly page: ClassPage,
    private readonly bar: HTMLElement,
  ) {
    const saved = ClassClient.saved();
    this.name = saved.name || "";
    this.token = saved.token || "";
    const form = bar.querySelector<HTMLFormElement>(".ex-class-join")!;
    const input = form.querySelector<HTMLInputElement>("input[name=name]")!;
    input.value = this.name;
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const name = input.value.trim();
      if (!name) return;
      if (name !== this.name) this.token = "";
      this.name = name;
      this.save();
      this.connect();
    });
    bar.hidden = false;
    if (this.name) this.connect();
  }

  static saved(): { name?: string; token?: string } {
    try {
      return JSON.parse(localStorage.getItem("connlab:class") || "{}") || {};
    } catch {
      return {};
    }
  }

  private save(): void {
    try {
      localStorage.setItem("connlab:class", JSON.stringify({ name: this.name, token: this.token }));
    } catch {
      /* not kept */
    }
  }

  private status(s: string): void {
    const p = this.bar.querySelector(".ex-class-status");
    if (p) p.textContent = s;
  }

  private connect(): void {
    this.ws?.close();
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(`${proto}//${location.host}/class/ws?lang=${encodeURIComponent(this.page.lang)}`);
    this.ws = ws;
    ws.onopen = () => {
      this.retry = 500;
      ws.send(JSON.stringify({ type: "join", name: this.name, token: this.token }));
    };
    ws.onmessage = (ev) => {
      let m: Record<string, unknown>;
      try {
        m = JSON.parse(String(ev.data));
      } catch {
        return;
      }
      this.message(m);
    };
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.joined = false;
      this.status(t("class_lost"));
      setTimeout(() => {
        if (this.ws === ws) this.connect();
      }, this.retry);
      this.retry = Math.min(this.retry * 2, 10000);
    };
  }

  send(x: Exercise, value: string): void {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN || !this.joined) {
      this.status(t("class_lost"));
      return;
    }
    this.ws.send(JSON.stringify({ type: "answer", lab: x.lab, exercise: x.id, value }));
  }

  private async message(m: Record<string, unknown>): Promise<void> {
    const page = this.page;
    switch (m.type) {
      case "joined": {
        this.joined = true;
        this.name = String(m.name);
        this.token = String(m.token);
        this.save();
        this.status(t("class_joined", { name: this.name }));
        const form = this.bar.querySelector<HTMLFormElement>(".ex-class-join");
        if (form) form.hidden = true;
        // A class is a fresh start: what this browser did alone stays out.
        for (const x of page.exercises) {
          x.reset();
          x.classSend = (x, v) => this.send(x, v);
        }
        await page.loadSeed(Number(m.seed) || 0, true);
        for (const a of (m.answered as { lab: string; exercise: string; value: string }[]) || []) {
          const x = page.find(a.lab, a.exercise);
          x?.sent(a.value);
        }
        for (const r of (m.revealed as Record<string, unknown>[]) || []) this.message(r);
        break;
      }
      case "ack": {
        const x = page.find(String(m.lab), String(m.exercise));
        x?.sent(String(m.value));
        break;
      }
      case "reveal": {
        const inst = m.exercise as Instance;
        const x = page.find(String(m.lab), inst.id);
        x?.classReveal(inst, (m.yours as { value: string; ok: boolean }) || null);
        break;
      }
      case "reset": {
        const x = page.find(String(m.lab), String(m.exercise));
        if (x) {
          x.reset();
          x.classSend = (x, v) => this.send(x, v);
          await page.loadSeed(page.seed, true);
        }
        break;
      }
      case "error":
        if (!this.joined) {
          this.status(`${t("class_full")}: ${String(m.message)}`);
          const form = this.bar.querySelector<HTMLFormElement>(".ex-class-join");
          if (form) form.hidden = false;
          this.token = "";
          this.save();
        } else {
          this.status(String(m.message));
        }
        break;
    }
  }
}

// One WebSocket per page to the sim server's /ws (same origin), shared by
// every widget; messages are routed by run id (sim/server/PROTOCOL.md).
import type { CancelMsg, Incoming, RunMsg, ServerMsg } from "./types";

type Handler = (m: Incoming) => void;
export type State = "idle" | "connecting" | "open" | "failed" | "closed";

export class Socket {
  state: State = "idle";
  private ws: WebSocket | null = null;
  private handlers = new Map<string, Handler>();
  private waiters: ((ok: boolean) => void)[] = [];
  private stateListeners: ((s: State) => void)[] = [];
  private seq = 0;

  onState(f: (s: State) => void): void {
    this.stateListeners.push(f);
  }

  private setState(s: State): void {
    this.state = s;
    for (const f of this.stateListeners) f(s);
  }

  url(): string | null {
    const l = window.location;
    if (l.protocol !== "http:" && l.protocol !== "https:") return null;
    return (l.protocol === "https:" ? "wss://" : "ws://") + l.host + "/ws";
  }

  // connect resolves true once the socket is open, false when no server
  // answers (a static host, a file:// page, the server stopped).
  connect(): Promise<boolean> {
    if (this.state === "open") return Promise.resolve(true);
    return new Promise((resolve) => {
      this.waiters.push(resolve);
      if (this.state === "connecting") return;
      const url = this.url();
      if (!url) {
        this.finish(false);
        return;
      }
      this.setState("connecting");
      let ws: WebSocket;
      try {
        ws = new WebSocket(url);
      } catch {
        this.finish(false);
        return;
      }
      this.ws = ws;
      ws.onopen = () => this.finish(true);
      ws.onmessage = (e) => this.dispatch(e.data);
      ws.onclose = () => {
        const wasOpen = this.state === "open";
        this.ws = null;
        if (!wasOpen) {
          this.finish(false);
          return;
        }
        this.setState("closed");
        for (const [id, h] of this.handlers) h({ type: "lost", id });
        this.handlers.clear();
      };
    });
  }

  private finish(ok: boolean): void {
    this.setState(ok ? "open" : "failed");
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f(ok);
  }

  private dispatch(data: unknown): void {
    if (typeof data !== "string") return;
    let m: ServerMsg;
    try {
      m = JSON.parse(data);
    } catch {
      return;
    }
    if (!m || typeof m.type !== "string") return;
    if (m.id) {
      const h = this.handlers.get(m.id);
      if (h) h(m);
      return;
    }
    // An error without an id concerns the socket: tell every run.
    for (const h of this.handlers.values()) h(m);
  }

  newID(block: string): string {
    this.seq++;
    return (block + "-" + this.seq).slice(-64);
  }

  // run sends a run message and routes its replies to h until forget(id).
  run(msg: RunMsg, h: Handler): boolean {
    if (!this.ws || this.state !== "open") return false;
    this.handlers.set(msg.id, h);
    this.ws.send(JSON.stringify(msg));
    return true;
  }

  cancel(id: string): void {
    const m: CancelMsg = { type: "cancel", id };
    if (this.ws && this.state === "open") this.ws.send(JSON.stringify(m));
  }

  forget(id: string): void {
    this.handlers.delete(id);
  }
}

export const socket = new Socket();

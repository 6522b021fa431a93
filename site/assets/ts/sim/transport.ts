// Where a widget's runs go: a Transport carries the run messages of
// sim/server/PROTOCOL.md both ways. Two carry them: the page's one
// WebSocket to sim serve (socket.ts), and, on a static host, the model in
// the page (model/client.ts), which answers in the same messages.
import { host, model } from "../model/client";
import { t } from "./i18n";
import { socket } from "./socket";
import type { Status } from "./status";
import type { BlockData, Incoming, RunMode, RunMsg } from "./types";

export interface Transport {
  newID(block: string): string;
  // run sends a run and hands its replies to h until forget; false when it
  // could not be sent.
  run(msg: RunMsg, h: (m: Incoming) => void): boolean;
  cancel(id: string): void;
  forget(id: string): void;
}

// transport is where a run of data's block in mode ("model" or "real")
// goes: the server when one answers, else the model in the page (loaded
// now if it is not yet, its progress shown by progress); null, with the
// reason in status, when neither can run it.
export async function transport(mode: RunMode, data: BlockData, status: Status, progress: () => void): Promise<Transport | null> {
  const h = await host();
  if (h.server && (await socket.connect())) return socket;
  if (mode === "real") {
    status.set(t("w_real_needs_server") + " make serve", true, "noserver");
    return null;
  }
  if (!model.available()) {
    status.set(t("w_noserver"), true, "noserver");
    return null;
  }
  const off = model.onProgress(progress);
  status.set("", false, "loading");
  progress();
  const ok = (await model.load()) && (await model.source(data.lab, "en", data.data));
  off();
  if (!ok) {
    status.set(t("w_model_failed") + " " + model.error, true, "noserver");
    return null;
  }
  return model;
}

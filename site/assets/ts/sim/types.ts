// Shapes of the data the widget reads. What Go writes (events, summaries,
// checks, the phase table…) is generated from it: schema.gen.ts, and the
// run protocol's messages protocol.gen.ts. Here only what Go does not
// declare: the block's data as the render hook reshapes it (layouts/_markup/render-codeblock-sim.html:
// variants with their settings as an object, the controls with their help in
// the page's language) and the message a transport makes up when its
// connection is lost.
import type { ServerMsg } from "./protocol.gen";
import type { BuiltVariant, Check, Control } from "./schema.gen";

export type { CancelMsg, ClientMsg, ExercisesMsg, RunMsg, ServerMsg } from "./protocol.gen";
export type {
  BuiltVariant, Check, Control, DoneVariant, Event, PhaseJSON, PhaseRow, RunMode, Sample, Stat, Summary, SummaryPhaseJSON,
} from "./schema.gen";

export interface VariantDef { name: string; label: string; settings: Record<string, unknown> }

export interface BlockData {
  lab: string; block: string; file: string; data: string; title: string; note: string;
  controls: Control[]; fixed: Record<string, unknown>; variants: VariantDef[];
  port_count: number;
  results: { variants?: BuiltVariant[]; checks?: Check[] };
}

// LostMsg is what the socket tells the widget when the server goes away
// mid-run (no server sends it).
export interface LostMsg { type: "lost"; id: string }

// Incoming is what a transport hands the widget: a message of the server →
// client table of PROTOCOL.md, or LostMsg.
export type Incoming = ServerMsg | LostMsg;

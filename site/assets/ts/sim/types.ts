// Shapes of the data the widget reads. What Go writes (events, summaries,
// checks, the phase table, the run protocol's messages…) is generated from
// it: schema.gen.ts. Here only what Go does not declare: the block's data
// that the render hook writes (layouts/_markup/render-codeblock-sim.html)
// and the message a transport makes up when its connection is lost.
import type { Check, Control, Sample, ServerMsg, Summary } from "./schema.gen";

export type {
  CancelMsg, Check, ClientMsg, Control, DoneVariant, Event, ExercisesMsg, PhaseJSON, PhaseRow, RunMode, RunMsg, Sample, ServerMsg, Stat, Summary,
  SummaryPhaseJSON,
} from "./schema.gen";

export interface VariantDef { name: string; label: string; settings: Record<string, unknown> }

export interface BuiltVariant { name: string; label: string; summary?: Summary; error?: string; series?: Sample[] }

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

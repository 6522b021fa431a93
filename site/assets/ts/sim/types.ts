// Shapes of the data the widget reads. What the simulator writes (events,
// summaries, checks, the phase table…) is generated from Go: schema.gen.ts.
// Here: the block's data that the render hook writes
// (layouts/_markup/render-codeblock-sim.html) and the messages of
// sim/server/PROTOCOL.md, made of those.
import type { Check, Control, Event, PhaseRow, Sample, Summary } from "./schema.gen";

export type { Check, Control, Event, PhaseJSON, PhaseRow, Sample, Stat, Summary, SummaryPhaseJSON } from "./schema.gen";

export interface VariantDef { name: string; label: string; settings: Record<string, unknown> }

export interface BuiltVariant { name: string; label: string; summary?: Summary; error?: string; series?: Sample[] }

export interface BlockData {
  lab: string; block: string; file: string; data: string; title: string; note: string;
  controls: Control[]; fixed: Record<string, unknown>; variants: VariantDef[];
  port_count: number;
  results: { variants?: BuiltVariant[]; checks?: Check[] };
}

export interface DoneVariant {
  name: string; label?: string; summary?: Summary; error?: string;
  model?: Summary; compare?: PhaseRow[] | { phases?: PhaseRow[] }; series?: Sample[]; harness_overhead_ms?: number;
  // A real run's verdict (agree, disagree, inconclusive), why, and how many CPUs other programs
  // used during it when the machine was busy.
  verdict?: string; why?: string; busy_cpus?: number;
  // A real run: what ran (runtime.name: "PHP 8.5.10 (WebAssembly …), libcurl …"), what its
  // probing script's statements printed, and the model's words for a variant it rejects.
  runtime?: Record<string, string>; checks?: Record<string, string>; model_error?: string;
}

// ServerMsg is any message of the server → client table of PROTOCOL.md.
export interface ServerMsg {
  type: string; id?: string; field?: string; message?: string; position?: number;
  mode?: string; block?: string; title?: string; variant?: string; events?: Event[];
  summary?: Summary; sent?: number; count?: number; checks?: Check[]; elapsed_ms?: number;
  variants?: DoneVariant[] | { name: string; label?: string }[];
  params?: Record<string, Record<string, unknown>>; series?: Sample[];
}

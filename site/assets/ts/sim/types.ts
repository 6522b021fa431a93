// Shapes of the data the widget reads: the block's data (written by the
// render hook layouts/_markup/render-codeblock-sim.html) and the messages of
// sim/server/PROTOCOL.md. Events are sim/event.go's AppendJSON objects.

export interface Stat { p50: number; p90: number; p99: number; mean: number }

export interface Summary {
  requests: number; failed_requests?: number; calls: number; connects: number; reused: number;
  errors: number; port_errors: number; races: number; time_wait_peak: number;
  server_time_wait_peak: number; open_peak: number; throughput_rps: number; duration_s: number;
  first_port_error_s: number | null; recovered_s: number | null;
  namelookup_ms: Stat; connect_ms: Stat; appconnect_ms: Stat; starttransfer_ms: Stat;
  total_ms: Stat; response_ms?: Stat; num_connects?: number[]; connects_per_worker?: number[];
  [k: string]: unknown;
}

export interface Sample {
  t_s: number; open: number; time_wait: number; server_time_wait: number; ports_in_use: number;
  requests: number; connects: number; errors: number;
}

export interface Check { expect: string; ok: boolean; got: string; want?: string; line?: number }

export interface Control {
  key: string; kind: string; value: unknown; default: string; min?: string; max?: string;
  unit?: string; enum?: string[]; help: string;
}

export interface VariantDef { name: string; label: string; settings: Record<string, unknown> }

export interface BuiltVariant { name: string; label: string; summary?: Summary; error?: string; series?: Sample[] }

export interface BlockData {
  lab: string; block: string; file: string; src: string; title: string; note: string;
  controls: Control[]; fixed: Record<string, unknown>; variants: VariantDef[];
  portRange: string;
  results: { variants?: BuiltVariant[]; checks?: Check[] };
}

export interface Ev {
  kind: string; at_ms: number; hop?: number; req?: number; call?: number; worker?: number; conn?: number;
  new_conn?: boolean; reused?: boolean; retried?: boolean; num_connects?: number;
  start_ms?: number; queue_ms?: number; namelookup_ms?: number; connect_ms?: number;
  appconnect_ms?: number; starttransfer_ms?: number; total_ms?: number; handshake?: string;
  local_port?: number; by?: string; reason?: string; error?: string;
}

export interface PhaseRow { phase: string; model_ms: number; measured_ms: number; error_pct: number; ok: boolean; note?: string }

export interface DoneVariant {
  name: string; label?: string; summary?: Summary; error?: string;
  model?: Summary; compare?: PhaseRow[] | { phases?: PhaseRow[] }; series?: Sample[]; harness_overhead_ms?: number;
}

// ServerMsg is any message of the server → client table of PROTOCOL.md.
export interface ServerMsg {
  type: string; id?: string; field?: string; message?: string; position?: number;
  mode?: string; block?: string; title?: string; variant?: string; events?: Ev[];
  summary?: Summary; sent?: number; count?: number; checks?: Check[]; elapsed_ms?: number;
  variants?: DoneVariant[] | { name: string; label?: string }[];
  params?: Record<string, Record<string, unknown>>; series?: Sample[];
}

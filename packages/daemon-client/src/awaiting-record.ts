import type { Awaiting } from "@gstack/contracts";

/** A decision waiting at a gstack gate, by the label its reply tokens use (`d3` of `r1-d3`). */
export interface GateItem {
  id: string;
  label: string;
  title: string;
  options: string[];
  recommended: string | null;
}

/** An answer accepted for a waiting dispatch: on disk (in its state) before it is acted on. */
export type AcceptedAnswer =
  | { kind: "approve"; accepted_at: string }
  | { kind: "revise"; feedback: string; accepted_at: string }
  | { kind: "reject"; reason: string; accepted_at: string }
  | { kind: "reply"; reply: string; accepted_at: string };

/** What the daemon keeps about a wait, in the session state. */
export interface AwaitingRecord extends Awaiting {
  /** The agent session the answer continues (`--resume`). */
  session_id?: string;
  /** For a gstack gate: where its run is, its revision and the decisions pending. */
  gate?: {
    run_dir: string;
    run?: string;
    gate_rev: number;
    items: GateItem[];
    /** The run's GSTACK_RESULT line and report, so a gate that ends unanswered is reported as it stood. */
    result_line?: string;
    report?: string;
  };
  /** Set when an answer was accepted; cleared when it has been acted on. */
  answer?: AcceptedAnswer;
}

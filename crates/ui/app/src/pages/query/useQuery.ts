// Runs one query against the API: a new request cancels the one in flight
// (AbortController), and the caller can cancel it too.
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { ApiError, call, type Params } from "../../api";
import type { QueryData } from "./types";

export interface QueryOutcome {
  status: "idle" | "loading" | "done" | "error" | "cancelled";
  data?: QueryData;
  /** Prometheus' error text, exactly. */
  error?: string;
  warnings: string[];
  infos: string[];
  /** Request sent to answer parsed, in ms. */
  roundTripMs?: number;
  /** performance.now() when the answer was parsed: the start of rendering. */
  receivedAt?: number;
  /** The parameters the data answers (the graph needs its start, end and step). */
  params?: Params;
}

const IDLE: QueryOutcome = { status: "idle", warnings: [], infos: [] };

/**
 * Fetches `path` with `params` whenever `params` (compared by value) or
 * `runId` (a new run of the same query) changes; `params === null` means
 * nothing to run. Callers build `params` in a memo: "now" is fixed per run.
 */
export function useQuery(path: string, params: Params | null, runId: number): [QueryOutcome, () => void] {
  const [outcome, setOutcome] = useState<QueryOutcome>(IDLE);
  const controller = useRef<AbortController | null>(null);
  const key = params ? JSON.stringify(params) : "";

  useEffect(() => {
    if (!params) {
      setOutcome(IDLE);
      return;
    }
    const abort = new AbortController();
    controller.current = abort;
    setOutcome((o) => ({ ...o, status: "loading" }));
    const started = performance.now();
    // POST: long expressions do not fit in a URL.
    call<QueryData>(path, params, { post: true, signal: abort.signal })
      .then((answer) => {
        const now = performance.now();
        setOutcome({
          status: "done",
          data: answer.data,
          warnings: answer.warnings,
          infos: answer.infos,
          roundTripMs: now - started,
          receivedAt: now,
          params,
        });
      })
      .catch((e: unknown) => {
        if (abort.signal.aborted) return;
        const err = e instanceof ApiError ? e : null;
        setOutcome({
          status: "error",
          error: err ? err.message : String(e),
          warnings: err?.warnings ?? [],
          infos: err?.infos ?? [],
          roundTripMs: performance.now() - started,
        });
      })
      .finally(() => {
        if (controller.current === abort) controller.current = null;
      });
    return () => abort.abort();
  }, [path, key, runId]);

  const cancel = useCallback(() => {
    controller.current?.abort();
    controller.current = null;
    setOutcome((o) => (o.status === "loading" ? { ...o, status: "cancelled" } : o));
  }, []);

  return [outcome, cancel];
}

// Fetching one API path for a page: the latest answer, the latest error, and
// whether a request is in flight. A new request cancels the one before it;
// the previous answer stays on screen while a reload runs, so pages do not flash.
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { call, type Answer, type Params } from "../api";

export interface Fetched<T> {
  answer?: Answer<T>;
  error?: Error;
  loading: boolean;
  /** Fetches again with the same parameters. */
  reload: () => void;
}

/** `path` null fetches nothing (a request that the page does not need now). */
export function useApi<T>(path: string | null, params: Params = {}): Fetched<T> {
  const key = JSON.stringify([path, params]);
  const [state, setState] = useState<{ answer?: Answer<T>; error?: Error; loading: boolean }>({ loading: true });
  const [generation, setGeneration] = useState(0);
  // The parameters of the current key, without making the object a dependency.
  const paramsRef = useRef(params);
  paramsRef.current = params;

  useEffect(() => {
    if (path === null) {
      setState({ loading: false });
      return;
    }
    const abort = new AbortController();
    setState((s) => ({ ...s, loading: true }));
    call<T>(path, paramsRef.current, { signal: abort.signal }).then(
      (answer) => setState({ answer, loading: false }),
      (error: Error) => {
        if (error.name !== "AbortError") setState((s) => ({ answer: s.answer, error, loading: false }));
      },
    );
    return () => abort.abort();
  }, [key, generation]);

  const reload = useCallback(() => setGeneration((g) => g + 1), []);
  return { ...state, reload };
}

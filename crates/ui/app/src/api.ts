// The one client of Cairn's HTTP API: every request is relative to the path
// prefix the page was served under, and every answer is Prometheus' envelope.

/** The path prefix the server wrote into the page ("" at the root). */
export const pathPrefix: string = (() => {
  const meta = document.querySelector('meta[name="cairn-path-prefix"]');
  const value = meta?.getAttribute("content") ?? "";
  // Served by Vite's dev server, the placeholder is still there.
  return value === "CAIRN_PATH_PREFIX" ? "" : value;
})();

/** What a successful call returns besides its data. */
export interface Answer<T> {
  data: T;
  warnings: string[];
  infos: string[];
}

/** A failed call: Prometheus' `errorType` and `error` text, or a transport failure. */
export class ApiError extends Error {
  constructor(
    readonly errorType: string,
    message: string,
    readonly status: number,
    readonly warnings: string[] = [],
    readonly infos: string[] = [],
  ) {
    super(message);
  }
}

export type Params = Record<string, string | number | string[] | undefined>;

function encode(params: Params): URLSearchParams {
  const out = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) value.forEach((v) => out.append(key, v));
    else out.append(key, String(value));
  }
  return out;
}

/** The URL of an API path (`api/v1/...`, no leading slash) under the prefix. */
export function apiUrl(path: string, params: Params = {}): string {
  const query = encode(params).toString();
  return `${pathPrefix}/${path}${query ? `?${query}` : ""}`;
}

interface Envelope<T> {
  status: "success" | "error";
  data?: T;
  errorType?: string;
  error?: string;
  warnings?: string[];
  infos?: string[];
}

/**
 * Calls an API path. Parameters go in a form body when `post` is set (long
 * queries), in the URL otherwise. `signal` cancels the request.
 */
export async function call<T>(
  path: string,
  params: Params = {},
  options: { post?: boolean; signal?: AbortSignal } = {},
): Promise<Answer<T>> {
  let response: Response;
  try {
    response = options.post
      ? await fetch(`${pathPrefix}/${path}`, {
          method: "POST",
          body: encode(params),
          signal: options.signal,
        })
      : await fetch(apiUrl(path, params), { signal: options.signal });
  } catch (e) {
    if ((e as Error).name === "AbortError") throw e;
    throw new ApiError("unavailable", `cannot reach the server: ${(e as Error).message}`, 0);
  }
  let body: Envelope<T>;
  try {
    body = (await response.json()) as Envelope<T>;
  } catch {
    throw new ApiError("bad_response", `the server answered ${response.status} without JSON`, response.status);
  }
  if (body.status !== "success") {
    throw new ApiError(
      body.errorType ?? "unknown",
      body.error ?? `HTTP ${response.status}`,
      response.status,
      body.warnings ?? [],
      body.infos ?? [],
    );
  }
  return { data: body.data as T, warnings: body.warnings ?? [], infos: body.infos ?? [] };
}

// What a page shows around fetched data: "loading" before the first answer,
// the server's error text when a request fails, the data otherwise.
import type { ComponentChildren } from "preact";
import { ApiError } from "../api";
import type { Fetched } from "./useApi";

/** Why a request failed, in words a reader can act on. */
export function describeError(error: Error): string {
  if (error instanceof ApiError && error.status === 404 && error.errorType === "not_found") {
    return `This server does not offer this endpoint (${error.message}). It may be older than this page.`;
  }
  return error.message;
}

export function ErrorBox({ error, what }: { error: Error; what: string }) {
  return (
    <div class="error" role="alert">
      <strong>Could not load {what}:</strong> {describeError(error)}
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted loading" aria-busy="true">
      Loading {what}…
    </p>
  );
}

/**
 * Renders `children(data)` once data arrived; a failed reload keeps the old
 * data under the error, so a flaky network does not blank the page.
 */
export function Fetching<T>({
  fetched,
  what,
  children,
}: {
  fetched: Fetched<T>;
  what: string;
  children: (data: T) => ComponentChildren;
}) {
  const { answer, error } = fetched;
  return (
    <>
      {error && <ErrorBox error={error} what={what} />}
      {answer ? (
        <>
          {answer.warnings.map((w) => (
            <div class="warning" key={w}>
              {w}
            </div>
          ))}
          {children(answer.data)}
        </>
      ) : (
        !error && <Loading what={what} />
      )}
    </>
  );
}

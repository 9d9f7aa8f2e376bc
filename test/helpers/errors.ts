// Reading Tally's error envelope in tests.
import type { ErrorResponse } from '@tally/client';

/** The `details.errors[].path` values of an error envelope, in order. */
export function errorPaths(error: ErrorResponse | undefined | unknown): string[] {
  const details = (error as ErrorResponse | undefined)?.details as { errors?: { path: string }[] } | undefined;
  return (details?.errors ?? []).map((e) => e.path);
}

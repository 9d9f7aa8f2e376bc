// The options of request validation, shared by the contract validator of the Express app (app.ts)
// and the ingestion listener's validators (ingest-validators.ts), so both check bodies alike.
import { fullFormats } from 'ajv-formats/dist/formats.js';

/** Query, path and header values are coerced to their declared types; JSON bodies never are. */
export const requestValidation = () => ({ allowUnknownQueryParameters: false, allErrors: true });

/**
 * ajv-formats' "fast" dates are shape-only regexes (2026-02-30 passes, then becomes 2 March); its
 * "full" validators check the calendar. Other formats stay fast: the full uri format refuses URLs
 * browsers really send (`?filter[a]=1`).
 */
export const validatorFormats = () => ({
  date: fullFormats.date,
  'date-time': fullFormats['date-time'],
  time: fullFormats.time,
});

// The options of request validation, shared by the contract validator of the Express app (app.ts)
// and the ingestion listener's validators (ingest-validators.ts), so both check bodies alike.
import { fullFormats } from 'ajv-formats/dist/formats.js';

/** Query, path and header values are coerced to their declared types; JSON bodies never are. */
export const requestValidation = () => ({ allowUnknownQueryParameters: false, allErrors: true });

/**
 * ajv-formats' "fast" formats are loose regexes: its fast dates let 2026-02-30 pass (then it
 * becomes 2 March), its fast uri takes any character but whitespace, non-ASCII included, and its
 * fast email takes `a..b@x` and hosts without a dot. The "full" ones check the calendar, RFC 3986
 * and the usual shape of an address, as the document says and as independent validators (Prism)
 * read it. URLs that browsers write, which may hold `[ ]` unencoded in a query, are not
 * `format: uri` in the document but strings with a pattern (`WebPageUrl`).
 */
export const validatorFormats = () => ({
  date: fullFormats.date,
  'date-time': fullFormats['date-time'],
  time: fullFormats.time,
  uri: fullFormats.uri,
  email: fullFormats.email,
});

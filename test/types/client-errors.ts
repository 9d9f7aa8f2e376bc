// Type test (compiled by `npm run typecheck`, never run): the client's error `code` is the
// contract's known codes plus any other string. Known codes autocomplete and compare, codes a later
// server adds still compile, an unchecked code is never taken for a known one, and
// isKnownErrorCode narrows it to the closed union, down to one literal per branch.
import {
  type ClientErrorCode,
  isKnownErrorCode,
  type KNOWN_ERROR_CODES,
  type KnownErrorCode,
  type TallyClient,
  type TallyError,
} from '@tally/client';
import type { KnownErrorCode as ServerKnownErrorCode } from '../../server/src/error-codes.gen.js';

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const expectType = <T extends true>(_proof?: T) => {};

// The open union, exactly; and the same known codes as the server's table.
expectType<Equal<TallyError['code'], KnownErrorCode | (string & {})>>();
expectType<Equal<KnownErrorCode, ServerKnownErrorCode>>();
expectType<Equal<(typeof KNOWN_ERROR_CODES)[number], KnownErrorCode>>();
// Not widened to string: a misspelt known code is not a KnownErrorCode.
// @ts-expect-error 'NOT_FUOND' is not a known code
const misspelt: KnownErrorCode = 'NOT_FUOND';

export async function handle(client: TallyClient): Promise<string> {
  const { data, error } = await client.eventsTrack({ body: { event_name: 'signup', user_id: 'u-1' } });
  if (error) {
    // @ts-expect-error data is undefined when error is set
    data.success;
    // @ts-expect-error an unchecked code may be one the contract does not name
    const unchecked: KnownErrorCode = error.code;
    if (isKnownErrorCode(error.code)) {
      const checked: KnownErrorCode = error.code;
      if (error.code === 'INVALID_REQUEST') {
        const one: 'INVALID_REQUEST' = error.code;
        return `${one} ${checked}`;
      }
      // @ts-expect-error narrowed: INVALID_REQUEST was handled above
      const gone: 'INVALID_REQUEST' = error.code;
      return String(gone);
    }
    switch (error.code) {
      case 'RATE_LIMIT_EXCEEDED':
        return `retry in ${String(error.details?.retry_after)} s`;
      case 'NETWORK_ERROR' satisfies ClientErrorCode:
        return 'offline';
      case 'A_CODE_ADDED_LATER':
        return 'still compiles';
      default:
        return `${error.code}: ${error.message} ${unchecked} ${misspelt}`;
    }
  }
  const ok: true = data.success;
  return String(ok);
}

// Rates people name that Tally has no built-in figure for. Rather than read the question without the
// rate's word (and answer something else), the engine says how such a rate is usually defined and
// which questions, in the app's own event names, give its two parts.
import type { Lexicon } from './lexicon.js';
import { NotUnderstood } from './not-understood.js';

interface NamedRate {
  /** The words that name the rate. */
  words: RegExp;
  /** How the rate is usually defined, for the refusal. */
  definition: string;
  /** The app's events for the rate's start and end step, found by name. */
  start: RegExp;
  end: RegExp;
}

const RATES: NamedRate[] = [
  {
    words: /\b(cart|checkout|basket)s?\s+abandon(ment|ed|s|ing)?\b|\babandon(ment|ed|s)?\s+(cart|checkout|basket)s?\b/i,
    definition:
      'cart abandonment is usually the share of users who added something to their cart in a period and did not buy in that period',
    start: /cart|basket/i,
    end: /purchase|order|checkout_completed|buy|paid/i,
  },
  {
    words: /\bbounce\s+rates?\b/i,
    definition: 'a bounce rate is usually the share of visits with a single page view',
    start: /page_?view|screen_?view|visit/i,
    end: /page_?view|screen_?view/i,
  },
];

/** Throws NotUnderstood, with the rate's usual definition and rephrasings, for a rate Tally does not compute. */
export function refuseNamedRates(text: string, lexicon: Lexicon): void {
  for (const rate of RATES) {
    const named = rate.words.exec(text);
    if (!named) continue;
    const start = lexicon.events.find((e) => rate.start.test(e.name))?.name;
    const end = lexicon.events.find((e) => rate.end.test(e.name) && e.name !== start)?.name;
    const rephrasings =
      start && end
        ? [
            `how many users did ${start} last month`,
            `how many users did ${start} last month but never ${end} last month`,
          ]
        : [];
    throw new NotUnderstood(
      `Tally has no built-in "${named[0]}": ${rate.definition}.${
        rephrasings.length > 0 ? ' Ask for its two parts and divide the second by the first.' : ''
      }`,
      [named[0]],
      rephrasings,
    );
  }
}

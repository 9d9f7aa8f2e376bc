// What the engine, its prompts and its compiler know of one app at one moment (built by
// languageContext in service.ts).
import type { Clock, Lexicon } from './index.js';
import type { CompileContext } from './queries/compile.js';

/** Everything the engine and the compiler need for one app at one moment. */
export interface LanguageContext {
  appId: string;
  lexicon: Lexicon;
  clock: Clock;
  timeZone: string;
  compile: CompileContext;
}

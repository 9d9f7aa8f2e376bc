// The built-in natural-language engine: loads the app's vocabulary (event names, property keys),
// parses the question in the controlled language and compiles it to SQL over the sandbox
// relations. Returns null when the question is outside the language.
import type { Knex } from 'knex';
import { localDate } from '../time.js';
import { type CompiledQuery, compile } from './compile.js';
import { type Lexicon, parseQuestion } from './parse.js';

export { NL_EXAMPLES } from './examples.js';

export async function loadLexicon(db: Knex, appId: string): Promise<Lexicon> {
  const definitions = await db('event_definitions').where({ app_id: appId }).select('event_name', 'properties');
  const sampled = await db.raw(
    `select distinct k from (
       select properties from events where app_id = ?::uuid and not is_bot order by created_at desc limit 2000
     ) s, jsonb_object_keys(s.properties) k`,
    [appId],
  );
  const properties = new Set<string>((sampled.rows as { k: string }[]).map((r) => r.k));
  for (const d of definitions) for (const k of Object.keys(d.properties ?? {})) properties.add(k);
  return {
    events: definitions.map((d) => d.event_name as string).sort(),
    properties: [...properties].sort(),
  };
}

/** Compiles a question, or returns null when the built-in engine does not understand it. */
export function compileQuestion(question: string, lexicon: Lexicon, timeZone: string, now: Date): CompiledQuery | null {
  const ast = parseQuestion(question, lexicon, localDate(now, timeZone));
  return ast ? compile(ast, timeZone, now) : null;
}

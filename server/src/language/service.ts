// Natural language for analytics and audiences: the app's lexicon (cached per app by the root's
// LexiconCache, rebuilt when new events or users arrive), the built-in engine first, then, when a
// language model is configured, the model filling the same AST through structured output
// (validated and compiled like the engine's), and only then SQL written by the model (run in the
// sandbox by the caller). A refusal names the words not understood, the app's closest events and
// properties, and rephrasings that work.

import type { ServiceContext } from '../context.js';
import { AppError, STATUS_OF } from '../errors.js';
import { LlmError } from '../llm/index.js';
import { findApp, findOrganization } from '../storage/tenancy.js';
import { localDate } from '../time.js';
import {
  type Condition,
  checkMeaning,
  examples,
  type Lexicon,
  NotUnderstood,
  type Query,
  suggest,
  understandCriteria,
  understandQuestion,
} from './index.js';
import type { LanguageContext } from './language-context.js';
import { criteriaPrompt, questionPrompt } from './prompts.js';
import { CRITERIA_SCHEMA, criteriaFromModel, QUERY_SCHEMA, queryFromModel } from './schema.js';

/** The app's lexicon, from the root's cache (language/lexicon-cache.ts). */
export function appLexicon(ctx: Pick<ServiceContext, 'db' | 'lexicons'>, appId: string): Promise<Lexicon> {
  return ctx.lexicons.get(ctx.db, appId);
}

export async function languageContext(ctx: ServiceContext, appId: string): Promise<LanguageContext> {
  const app = await findApp(ctx.db, appId);
  const timeZone = (app && (await findOrganization(ctx.db, app.organization_id))?.timezone) || 'UTC';
  const lexicon = await appLexicon(ctx, appId);
  const now = ctx.clock();
  const today = localDate(now, timeZone);
  return {
    appId,
    lexicon,
    timeZone,
    clock: { today, now },
    compile: {
      appId,
      now,
      timeZone,
      today,
      moneyKey: lexicon.moneyKey,
      conversionEvents: app?.conversion_events ?? [],
      firstSeen: (events) => {
        const seen = lexicon.events
          .filter((e) => events.length === 0 || events.includes(e.name))
          .map((e) => e.firstSeen)
          .filter((s): s is string => !!s)
          .sort();
        return seen[0] ?? null;
      },
    },
  };
}

export interface RefusalDetails {
  reason: string;
  unknown: string[];
  suggestions: { events: string[]; properties: string[]; rephrasings: string[] };
  examples: string[];
  [key: string]: unknown;
}

export class QueryNotUnderstoodError extends AppError<'QUERY_NOT_UNDERSTOOD'> {
  constructor(message: string, details: RefusalDetails) {
    super(STATUS_OF.QUERY_NOT_UNDERSTOOD, 'QUERY_NOT_UNDERSTOOD', message, details);
  }
}

/** The refusal for a text the engine (and the model) could not read. */
export function refusal(
  lc: LanguageContext,
  text: string,
  err: NotUnderstood,
  kind: 'question' | 'criteria',
  note = '',
): QueryNotUnderstoodError {
  const suggestions = suggest(text, err, lc.lexicon, lc.clock, kind);
  const what = kind === 'question' ? 'that question' : `the criteria "${text.slice(0, 200)}"`;
  const unknown = err.unknown
    .filter(Boolean)
    .slice(0, 20)
    .map((w) => (w.length > 60 ? `${w.slice(0, 60)}…` : w));
  const hint =
    suggestions.rephrasings.length > 0
      ? ` Try: "${suggestions.rephrasings[0]}".`
      : ' See details.examples for phrasings that work.';
  return new QueryNotUnderstoodError(`Tally did not understand ${what}: ${err.message}${note}${hint}`, {
    reason: err.message,
    unknown,
    suggestions,
    examples: examples(lc.lexicon, kind),
  });
}

/** A failure of the engine itself on some text: logged, and answered as not understood (never a 500). */
function engineFailure(ctx: ServiceContext, text: string, err: unknown): NotUnderstood {
  // Not the text: a question may hold a user's value (`users whose plan is ...`).
  ctx.logger.error({ err, characters: text.length }, 'the natural-language engine failed on a text');
  return new NotUnderstood('Tally could not read it.');
}

export type Reading<T> =
  | { method: 'rules' | 'llm'; ast: T; confidence: number; corrections: [string, string][] }
  | { method: 'llm_sql'; needsSql: true; confidence: number; rulesError: NotUnderstood };

/**
 * Reads a question: the built-in engine, else the model filling the AST. Returns `needsSql` when
 * only model-written SQL is left to try (the caller asks for it and runs it in the sandbox).
 */
export async function readQuestion(ctx: ServiceContext, lc: LanguageContext, text: string): Promise<Reading<Query>> {
  try {
    const { ast, corrections } = understandQuestion(text, lc.lexicon, lc.clock);
    return { method: 'rules', ast, confidence: 1, corrections };
  } catch (caught) {
    const err = caught instanceof NotUnderstood ? caught : engineFailure(ctx, text, caught);
    if (!ctx.llm) throw refusal(lc, text, err, 'question', ' No language model is configured.');
    return fromModel(ctx, lc, text, err, 'question');
  }
}

/** Reads audience criteria, like readQuestion. */
export async function readCriteria(
  ctx: ServiceContext,
  lc: LanguageContext,
  text: string,
): Promise<Reading<Condition>> {
  try {
    const { ast, corrections } = understandCriteria(text, lc.lexicon, lc.clock);
    return { method: 'rules', ast, confidence: 1, corrections };
  } catch (caught) {
    const err = caught instanceof NotUnderstood ? caught : engineFailure(ctx, text, caught);
    if (!ctx.llm) throw refusal(lc, text, err, 'criteria');
    return fromModel(ctx, lc, text, err, 'criteria');
  }
}

async function fromModel<T>(
  ctx: ServiceContext,
  lc: LanguageContext,
  text: string,
  rulesError: NotUnderstood,
  kind: 'question' | 'criteria',
): Promise<Reading<T>> {
  let answer: unknown;
  try {
    answer = await ctx.llm!.json({
      system: kind === 'question' ? questionPrompt(lc) : criteriaPrompt(lc),
      prompt: text,
      schemaName: kind === 'question' ? 'analytics_query' : 'audience_criteria',
      schema: kind === 'question' ? QUERY_SCHEMA : CRITERIA_SCHEMA,
    });
  } catch (err) {
    ctx.logger.warn({ err: err instanceof LlmError ? err.message : err }, 'the language model failed to read a text');
    throw refusal(lc, text, rulesError, kind, ' The language model did not answer either.');
  }
  try {
    const read = kind === 'question' ? queryFromModel(answer, lc.lexicon) : criteriaFromModel(answer, lc.lexicon);
    // the model's reading goes through the same guard as the engine's
    checkMeaning(text, read.ast as Query | Condition, lc.lexicon, lc.clock, kind);
    return { method: 'llm', ast: read.ast as T, confidence: read.confidence, corrections: [] };
  } catch (err) {
    if (!(err instanceof NotUnderstood)) throw err;
    ctx.logger.info({ err: err.message }, 'the language model could not fill the query AST; trying SQL');
    return { method: 'llm_sql', needsSql: true, confidence: 0, rulesError };
  }
}

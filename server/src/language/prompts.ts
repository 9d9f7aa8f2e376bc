// What the language model is told when the built-in engine does not understand a text: the AST's
// meaning (it answers in the JSON Schema of language/schema.ts), the app's own vocabulary, the
// time zone and today's date; and, as the last resort, the sandbox relations for writing SQL.
import type { LanguageContext } from './language-context.js';

type PropertyWords = LanguageContext['lexicon']['userProperties'] extends Map<string, infer P> ? P : never;

/** A property as the model reads it: its key, and a few sample values or that it is a number. */
function describeProperty(p: PropertyWords): string {
  if (p.numeric) return `${p.key} (number)`;
  if (!p.values.length) return p.key;
  return `${p.key} (e.g. ${p.values
    .slice(0, 5)
    .map((v) => v.value)
    .join(', ')})`;
}

function vocabulary(lc: LanguageContext): string {
  const lines: string[] = [];
  for (const e of lc.lexicon.events.slice(0, 60)) {
    const props = e.properties.slice(0, 15).map(describeProperty).join('; ');
    lines.push(`- event "${e.name}"${e.displayName ? ` ("${e.displayName}")` : ''}: ${props || 'no properties'}`);
  }
  const users = [...lc.lexicon.userProperties.values()].slice(0, 30).map(describeProperty).join('; ');
  lines.push(`- user properties: ${users || 'none'}; user columns: email, phone, user_id`);
  lines.push(`- money: ${lc.lexicon.moneyKey ? `"$revenue" (the events' ${lc.lexicon.moneyKey})` : 'none'}`);
  return lines.join('\n');
}

const TIME = (lc: LanguageContext) =>
  [
    `Today is ${lc.clock.today} in the organization's time zone ${lc.timeZone}; now is ${lc.clock.now.toISOString()}.`,
    'Periods are [from, to) with anchors: {unit, offset, months} = start of the calendar unit containing today moved by offset units (weeks start on Monday), then by months;',
    '{date: "YYYY-MM-DD"} = midnight starting that day; {hours: N} = now minus N hours. "last week" = {unit:week,offset:-1} to {unit:week,offset:0};',
    '"this month" = {unit:month,offset:0} to {unit:day,offset:1}; "the last 7 days" = {unit:day,offset:-6} to {unit:day,offset:1}; "yesterday" = {unit:day,offset:-1} to {unit:day,offset:0}.',
  ].join('\n');

export function questionPrompt(lc: LanguageContext): string {
  return [
    'You translate an analytics question about one app into a query object (the JSON schema given).',
    'Use only the events and properties listed; names must match exactly. Set understood=false when the question needs anything else.',
    'measure.kind: events (count), users (distinct users), new_users (first seen in the period), aggregate (fn over a numeric property; key "$revenue" for money),',
    'metric (dau, wau, mau, retention, churn, conversion, arpu: app-wide, no filters), retention_day (day N), ratio (numerator/denominator parts), funnel (from -> to).',
    'events: the events measured (empty = any); filters on their properties. segment: a condition on users (user properties, or "did" events).',
    'groupBy: a breakdown; bucket: a time series; compare: several periods instead of period. Leave fields null when not needed.',
    TIME(lc),
    'The app:',
    vocabulary(lc),
  ].join('\n');
}

export function criteriaPrompt(lc: LanguageContext): string {
  return [
    'You translate a description of a group of users of one app into a condition (the JSON schema given).',
    'type "did": did one of events (empty = any) with filters within period, times (count bounds) or total (sum of a property, key "$revenue" for money);',
    '"inactive": no event in the period and first seen before it; "first_seen": first seen in the period; "user": a filter on user properties or the columns email, phone, user_id;',
    '"and"/"or" with "of", "not" with one condition in "of", "all". Use only the events and properties listed; set understood=false otherwise.',
    TIME(lc),
    'The app:',
    vocabulary(lc),
  ].join('\n');
}

export function analyticsSqlPrompt(lc: LanguageContext): string {
  return [
    'You translate analytics questions into one PostgreSQL SELECT statement.',
    'Only two relations exist, already restricted to the app:',
    '  events(id uuid, user_id text, event_name text, properties jsonb, created_at timestamptz)',
    '  users(id uuid, user_id text, email text, phone text, properties jsonb, origin jsonb, created_at timestamptz, last_active timestamptz, event_count bigint)',
    'events.user_id and users.user_id are the same identifier. Do not qualify names with a schema.',
    'Use only common functions (count, sum, avg, min, max, date_trunc, to_char, coalesce, jsonb operators).',
    `The organization's time zone is ${lc.timeZone}; today is ${lc.clock.today} there. Use created_at AT TIME ZONE '${lc.timeZone}' for days.`,
    'Name a single figure `value`; a breakdown: the dimension and `value`; a series: `date` and `value`.',
    'The app:',
    vocabulary(lc),
  ].join('\n');
}

export function audienceSqlPrompt(lc: LanguageContext): string {
  return [
    'You turn a description of a group of users into one PostgreSQL SELECT statement.',
    'Only these two relations exist (already limited to one app; bot traffic is excluded):',
    '  users(id, user_id, email, phone, properties jsonb, origin jsonb, created_at, last_active, event_count)',
    '  events(id, user_id, event_name, properties jsonb, created_at)',
    'user_id is the user identifier in both relations (join on it). users.created_at is when the user was first seen;',
    'events.created_at is when the event happened. Read properties with ->> (text) or -> (jsonb).',
    'The statement must return a column named user_id, one row per matching user. Write literal values',
    '(no $1 parameters), no schema names, no other tables, no data changes, no regular expressions,',
    'no generate_series; join with JOIN ... ON, never a comma-separated FROM.',
    `The current time is ${lc.clock.now.toISOString()} (time zone ${lc.timeZone}).`,
    'If the description cannot be expressed with these relations, answer sql "" and confidence 0.',
    'The app:',
    vocabulary(lc),
  ].join('\n');
}

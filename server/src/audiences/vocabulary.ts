// The words of the criteria language: subjects, auxiliaries, negations, verbs, units, comparison
// words and the words that may not be used unquoted as names or values.
import type { Unit } from './ast.js';

export const SUBJECTS = new Set(['users', 'user', 'people', 'customers', 'members', 'visitors', 'accounts', 'those']);
export const RELATIVES = new Set(['who', 'that', 'which', 'they']);
export const LEADS = new Set(['show', 'find', 'get', 'list', 'select', 'give', 'me', 'all', 'the', 'every', 'any']);
export const AUX = new Set(['have', 'has', 'had', 'are', 'were', 'is', 'was', 'been', 'be', 'ever']);
export const NEGATIONS = new Set([
  'not',
  'never',
  "didn't",
  "don't",
  "doesn't",
  "haven't",
  "hasn't",
  "weren't",
  "aren't",
  "isn't",
  "wasn't",
]);
export const IMPLY_EVENT = new Set(['never', "didn't", "don't", "doesn't", "haven't", "hasn't"]);
export const EVENT_VERBS = new Set([
  'did',
  'do',
  'done',
  'performed',
  'perform',
  'triggered',
  'trigger',
  'tracked',
  'fired',
  'made',
]);
export const UNITS: Record<string, Unit> = {
  hour: 'hour',
  hours: 'hour',
  day: 'day',
  days: 'day',
  week: 'week',
  weeks: 'week',
  month: 'month',
  months: 'month',
  year: 'year',
  years: 'year',
};
export const NUMBER_WORDS: Record<string, number> = {
  zero: 0,
  one: 1,
  two: 2,
  three: 3,
  four: 4,
  five: 5,
  six: 6,
  seven: 7,
  eight: 8,
  nine: 9,
  ten: 10,
  twelve: 12,
  fourteen: 14,
  thirty: 30,
  ninety: 90,
};
export const PERIODS = new Set(['day', 'week', 'month', 'year']);
/** Words that end a value or cannot be an unquoted event name or property key. */
export const RESERVED = new Set([
  'and',
  'or',
  'but',
  'not',
  'at',
  'in',
  'within',
  'during',
  'over',
  'since',
  'between',
  'before',
  'after',
  'on',
  'this',
  'last',
  'today',
  'yesterday',
  'times',
  'time',
  'exactly',
  'more',
  'fewer',
  'less',
  'who',
  'whose',
  'that',
  'which',
  'where',
  'with',
  'without',
  'is',
  'was',
  'from',
]);
export const VALUE_STOPS = new Set(['and', 'or', 'but', 'who', 'whose', 'which', 'where']);
export const GREATER = new Set(['greater', 'more', 'higher', 'larger', 'bigger']);
export const LESS = new Set(['less', 'fewer', 'lower', 'smaller']);
export const SET_WORDS = new Set(['set', 'present', 'defined', 'known']);
export const UNSET_WORDS = new Set(['missing', 'unset', 'unknown', 'absent', 'empty']);
export const OPERATOR_WORDS = new Set([
  'is',
  'was',
  'equals',
  'contains',
  'contain',
  'include',
  'includes',
  'starts',
  'begins',
  'ends',
  'exists',
  'does',
  "doesn't",
  "isn't",
  ...GREATER,
  ...LESS,
]);

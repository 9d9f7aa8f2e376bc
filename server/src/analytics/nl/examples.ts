// Questions the built-in engine understands: returned in QUERY_NOT_UNDERSTOOD errors and shown in
// docs/analytics.md.
export const NL_EXAMPLES = [
  'how many events in the last 7 days',
  'unique users per day for the last 30 days',
  'count purchase events by week this month',
  'total revenue by country last month',
  'average revenue of purchases between 2026-01-01 and 2026-01-31',
  'top 5 events yesterday',
  'top 3 categories by unique users',
  'users with more than 10 events',
  'how many users did purchase at least 2 times in the last 30 days',
  'purchases where country is FR by day',
];

// The pure rules of campaigns: quiet hours in a time zone (overnight periods, daylight-saving
// days), cron runs across a daylight-saving change, the default daily recurrence, and the text of
// one recipient (placeholders filled, then max_characters), checked by examples and properties.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { renderText } from '../../server/src/engagement/campaign-delivery.js';
import { mcpEarliestStart, mcpRecurrenceAllowed } from '../../server/src/engagement/campaign-mcp-rules.js';
import {
  cronProblem,
  dailyAt,
  nextCronRun,
  quietHoursEnd,
  shortestGapMs,
} from '../../server/src/engagement/campaign-schedule.js';
import { validQuietHours } from '../../server/src/time.js';

const at = (iso: string) => new Date(iso);

describe('quiet hours', () => {
  it('lets sends outside them go at once and holds the others until they end (organization time)', () => {
    const paris = 'Europe/Paris';
    expect(quietHoursEnd(at('2026-06-10T12:00:00Z'), '22:00-08:00', paris)).toEqual(at('2026-06-10T12:00:00Z'));
    // 23:30 in Paris (CEST): until 08:00 the next day
    expect(quietHoursEnd(at('2026-06-10T21:30:00Z'), '22:00-08:00', paris)).toEqual(at('2026-06-11T06:00:00Z'));
    // 03:00 in Paris: until 08:00 the same day
    expect(quietHoursEnd(at('2026-06-11T01:00:00Z'), '22:00-08:00', paris)).toEqual(at('2026-06-11T06:00:00Z'));
    // the night the clocks go forward (29 March 2026): 08:00 CEST is 06:00 UTC
    expect(quietHoursEnd(at('2026-03-28T22:30:00Z'), '22:00-08:00', paris)).toEqual(at('2026-03-29T06:00:00Z'));
    // a daytime period
    expect(quietHoursEnd(at('2026-06-10T11:00:00Z'), '12:00-14:00', 'UTC')).toEqual(at('2026-06-10T11:00:00Z'));
    expect(quietHoursEnd(at('2026-06-10T13:59:00Z'), '12:00-14:00', 'UTC')).toEqual(at('2026-06-10T14:00:00Z'));
    expect(quietHoursEnd(at('2026-06-10T13:59:00Z'), null, 'UTC')).toEqual(at('2026-06-10T13:59:00Z'));
  });

  it('never moves a send earlier, and never holds it more than a day', () => {
    fc.assert(
      fc.property(
        fc.date({ min: at('2020-01-01T00:00:00Z'), max: at('2035-01-01T00:00:00Z'), noInvalidDate: true }),
        fc.integer({ min: 0, max: 23 }),
        fc.integer({ min: 0, max: 23 }),
        fc.constantFrom('UTC', 'Europe/Paris', 'America/New_York', 'Asia/Kolkata', 'Australia/Lord_Howe'),
        (now, a, b, tz) => {
          fc.pre(a !== b);
          const q = `${String(a).padStart(2, '0')}:00-${String(b).padStart(2, '0')}:30`;
          expect(validQuietHours(q)).toBe(true);
          const end = quietHoursEnd(now, q, tz);
          expect(end.getTime()).toBeGreaterThanOrEqual(now.getTime());
          expect(end.getTime() - now.getTime()).toBeLessThanOrEqual(86_400_000);
        },
      ),
    );
  });

  it('refuses a period that starts when it ends', () => {
    expect(validQuietHours('08:00-08:00')).toBe(false);
    expect(validQuietHours('24:00-08:00')).toBe(false);
  });
});

describe('cron in the organization time zone', () => {
  it('keeps 09:00 local across the spring change in New York', () => {
    const tz = 'America/New_York';
    const first = nextCronRun('0 9 * * *', at('2026-03-07T12:00:00Z'), tz);
    const second = nextCronRun('0 9 * * *', first, tz);
    expect([first, second]).toEqual([at('2026-03-07T14:00:00Z'), at('2026-03-08T13:00:00Z')]);
    // and the autumn change
    expect(nextCronRun('0 9 * * *', at('2026-10-31T14:00:00Z'), tz)).toEqual(at('2026-11-01T14:00:00Z'));
  });

  it('reads the default daily time from scheduled_at in the time zone, and checks expressions', () => {
    expect(dailyAt(at('2026-06-10T07:45:00Z'), 'Europe/Paris')).toBe('45 9 * * *');
    expect(cronProblem('0 9 * * 1')).toBeNull();
    expect(cronProblem('0 9 * *')).toMatch(/five fields/);
    expect(cronProblem('61 9 * * *')).toMatch(/not a valid cron/);
  });
});

describe('recipient text', () => {
  const user = { external_id: 'u-1', properties: { first_name: 'Ann', plan: 3 } };
  it('fills placeholders from properties, drops unknown ones, then applies max_characters', () => {
    expect(renderText('Hi {{first_name}}!', user, null)).toBe('Hi Ann!');
    expect(renderText('Hi {{ nickname }}!', user, null)).toBe('Hi!');
    expect(renderText('{{user_id}} on plan {{plan}}', user, null)).toBe('u-1 on plan 3');
    expect(renderText('Hello {{first_name}}, a long message', user, 10)).toBe('Hello Ann…');
  });

  it('never exceeds max_characters (in code points)', () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 300 }),
        fc.string({ maxLength: 200 }),
        fc.integer({ min: 1, max: 500 }),
        (template, name, max) => {
          const text = renderText(
            `${template}{{first_name}}`,
            { external_id: 'x', properties: { first_name: name } },
            max,
          );
          expect([...text].length).toBeLessThanOrEqual(max);
        },
      ),
    );
  });
});

describe('the interval and lead-time rules of campaigns created through MCP', () => {
  it('measures the shortest gap between runs, in the time zone, across a daylight-saving change', () => {
    const from = at('2026-06-01T00:00:00Z');
    expect(shortestGapMs('0 9 * * *', from, 'UTC')).toBe(24 * 3_600_000);
    expect(shortestGapMs('0,30 9 * * *', from, 'UTC')).toBe(30 * 60_000);
    expect(shortestGapMs('0 9,10 * * *', from, 'UTC')).toBe(3_600_000);
    // 01:30 and 02:30 on the night New York's clocks go back (1 November 2026): 01:30 happens twice
    // in local time, yet the runs stay at least an hour apart
    expect(shortestGapMs('30 1,2 * * *', at('2026-10-31T00:00:00Z'), 'America/New_York')).toBeGreaterThanOrEqual(
      3_600_000,
    );
  });

  it('is the smallest circular difference for any set of minutes in an hourly cron (property)', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 0, max: 59 }), { minLength: 1, maxLength: 6 }), (minutes) => {
        const sorted = [...minutes].sort((a, b) => a - b);
        const gaps = sorted.map((m, i) => (i + 1 < sorted.length ? sorted[i + 1]! - m : 60 - m + sorted[0]!));
        const expected = Math.min(...gaps) * 60_000;
        // 12 runs cover a whole hour and its wrap into the next for up to 6 minutes
        expect(shortestGapMs(`${sorted.join(',')} * * * *`, at('2026-06-01T00:00:00Z'), 'UTC', 12)).toBe(expected);
      }),
      { numRuns: 50 },
    );
  });

  it('refuses a first send sooner than the lead time and a cooldown under an hour, naming what would do', () => {
    const now = at('2026-06-01T10:00:00Z');
    const input = { name: 'n', title: 't', message: 'm' } as const;
    expect(mcpEarliestStart({ ...input, schedule_type: 'slipping_away' }, now, 15)).toEqual(at('2026-06-01T10:15:00Z'));
    expect(
      mcpEarliestStart({ ...input, schedule_type: 'scheduled', scheduled_at: '2026-06-01T10:15:00Z' }, now, 15),
    ).toEqual(at('2026-06-01T10:15:00Z'));
    try {
      mcpEarliestStart({ ...input, schedule_type: 'scheduled', scheduled_at: '2026-06-01T10:14:59Z' }, now, 15);
      expect.unreachable();
    } catch (err) {
      expect(err).toMatchObject({
        status: 400,
        code: 'INVALID_REQUEST',
        details: { earliest_scheduled_at: '2026-06-01T10:15:00.000Z' },
      });
    }
    expect(() =>
      mcpEarliestStart(
        { ...input, schedule_type: 'trigger', trigger_event_name: 'e', trigger_cooldown_hours: 0 },
        now,
        15,
      ),
    ).toThrow(/once an hour/);
    expect(() => mcpRecurrenceAllowed('*/59 * * * *', now, 'UTC')).toThrow(/minutes apart/);
    expect(() => mcpRecurrenceAllowed('0 * * * *', now, 'UTC')).not.toThrow();
  });
});

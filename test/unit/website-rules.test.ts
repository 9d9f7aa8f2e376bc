// The pure rules behind the website endpoints: which origins an app allows, how visits are
// classified, and how the IP is kept under each ip_mode.
import { describe, expect, it } from 'vitest';
import { storedIp } from '../../server/src/tracking/ingestion.js';
import { classifyVisit } from '../../server/src/website/bot-detection.js';
import { callerOrigin, originAllowed } from '../../server/src/website/origin.js';

describe('origins', () => {
  const app = {
    website_url: 'https://Shop.example/store/',
    authorized_domains: ['*.Partner.example', 'https://typo.example/path', 'localhost:5173'],
  };

  it('matches the origin of website_url exactly (scheme, host, port; host case-insensitive)', () => {
    expect(originAllowed(app, 'https://shop.example')).toBe(true);
    expect(originAllowed(app, 'https://shop.example:443')).toBe(true);
    expect(originAllowed(app, 'http://shop.example')).toBe(false);
    expect(originAllowed(app, 'https://shop.example:8443')).toBe(false);
    expect(originAllowed(app, 'https://www.shop.example')).toBe(false);
  });

  it('matches authorized domains by host, *.domain covering subdomains only, with an optional port', () => {
    expect(originAllowed(app, 'https://a.partner.example')).toBe(true);
    expect(originAllowed(app, 'http://a.b.partner.example:8080')).toBe(true);
    expect(originAllowed(app, 'https://partner.example')).toBe(false);
    expect(originAllowed(app, 'https://evilpartner.example')).toBe(false);
    expect(originAllowed(app, 'https://typo.example')).toBe(true);
    expect(originAllowed(app, 'http://localhost:5173')).toBe(true);
    expect(originAllowed(app, 'http://localhost:5174')).toBe(false);
  });

  it('matches *.domain against real subdomains only: no empty label, no look-alike suffix', () => {
    const shop = { website_url: null, authorized_domains: ['*.shop.example', '*.ports.example:8443'] };
    expect(originAllowed(shop, 'https://a.shop.example')).toBe(true);
    expect(originAllowed(shop, 'https://a.b.shop.example')).toBe(true);
    for (const origin of [
      'https://.shop.example',
      'https://a..shop.example',
      'https://a.shop.example.',
      'https://shop.example',
      'https://shop.example.evil',
      'https://evilshop.example',
      'https://a.shop.example.evil',
    ]) {
      expect(originAllowed(shop, origin), origin).toBe(false);
    }
    expect(originAllowed(shop, 'https://a.ports.example:8443')).toBe(true);
    expect(originAllowed(shop, 'https://a.ports.example')).toBe(false);
    expect(originAllowed({ website_url: null, authorized_domains: ['*.'] }, 'https://a.example')).toBe(false);
    expect(originAllowed({ website_url: null, authorized_domains: ['*..example'] }, 'https://a..example')).toBe(false);
  });

  it('refuses a missing or opaque origin, and reads the Referer only without an Origin', () => {
    expect(originAllowed(app, null)).toBe(false);
    expect(callerOrigin('null', 'https://shop.example/x')).toBeNull();
    expect(callerOrigin(undefined, 'https://shop.example/x?y=1')).toBe('https://shop.example');
    expect(callerOrigin('https://a.example', 'https://shop.example/')).toBe('https://a.example');
    expect(callerOrigin(undefined, 'not a url')).toBeNull();
    expect(callerOrigin('file:///etc/passwd', undefined)).toBeNull();
    expect(originAllowed({ website_url: null, authorized_domains: [] }, 'https://shop.example')).toBe(false);
  });
});

describe('classifyVisit', () => {
  const ua =
    'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Safari/605.1.15';
  const signals = { js_enabled: true, language: 'fr-FR', webdriver: false };

  it('treats a browser that ran the SDK with a normal user agent as a person', () => {
    expect(classifyVisit({ ua, signals })).toEqual({ isBot: false, reasons: [] });
  });

  it('names every reason that applies', () => {
    expect(classifyVisit({ ua: null, signals: { webdriver: true } }).reasons).toEqual([
      'webdriver',
      'missing_js_signals',
      'missing_user_agent',
    ]);
    expect(classifyVisit({ ua: 'curl/8.5.0', signals }).reasons).toEqual(['bot_user_agent']);
    expect(classifyVisit({ ua: `${ua} HeadlessChrome/120`, signals }).reasons).toEqual(['headless_user_agent']);
  });

  it('reads advanced signals only when given', () => {
    const advanced = { languages: [], screen: { width: 0, height: 800 }, automation: true };
    expect(classifyVisit({ ua, signals, advancedSignals: advanced }).reasons).toEqual([
      'no_languages',
      'zero_screen',
      'automation_globals',
    ]);
    expect(
      classifyVisit({ ua, signals, advancedSignals: { languages: ['en'], screen: { width: 1, height: 1 } } }).isBot,
    ).toBe(false);
  });
});

describe('storedIp', () => {
  it('keeps, truncates or drops the IP as the app says', () => {
    expect(storedIp({ ip_mode: 'full' }, '203.0.113.7')).toBe('203.0.113.7');
    expect(storedIp({ ip_mode: 'none' }, '203.0.113.7')).toBeNull();
    expect(storedIp({ ip_mode: 'truncate' }, '203.0.113.7')).toBe('203.0.113.0');
    expect(storedIp({ ip_mode: 'truncate' }, '::ffff:203.0.113.7')).toBe('203.0.113.0');
    expect(storedIp({ ip_mode: 'truncate' }, '2001:db8:85a3:8d3:1319:8a2e:370:7348')).toBe('2001:db8:85a3::');
    expect(storedIp({ ip_mode: 'truncate' }, '2001:db8::1')).toBe('2001:db8:0::');
    expect(storedIp({ ip_mode: 'truncate' }, '::1')).toBe('0:0:0::');
    expect(storedIp({ ip_mode: 'full' }, null)).toBeNull();
  });
});

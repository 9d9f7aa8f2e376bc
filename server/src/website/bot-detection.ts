// Classifies a website visit as human or bot from the signals the SDK sends. Basic mode reads
// navigator.webdriver, whether JavaScript signals arrived at all, and the user agent (the isbot
// list plus headless-browser hints); advanced mode adds a few fingerprinting signals.
import { isbot } from 'isbot';

export interface VisitSignalsInput {
  ua: string | null;
  signals: Record<string, unknown> | undefined;
  advancedSignals?: Record<string, unknown>;
}

export interface BotVerdict {
  isBot: boolean;
  /** Why the visit counts as a bot (empty for people), e.g. `webdriver`, `headless_user_agent`. */
  reasons: string[];
}

const HEADLESS = /headless|phantomjs|slimerjs|puppeteer|playwright|selenium|webdriver/i;

export function classifyVisit({ ua, signals, advancedSignals }: VisitSignalsInput): BotVerdict {
  const reasons: string[] = [];
  if (signals?.webdriver === true) reasons.push('webdriver');
  if (signals?.js_enabled !== true) reasons.push('missing_js_signals');
  if (!ua) reasons.push('missing_user_agent');
  else if (HEADLESS.test(ua)) reasons.push('headless_user_agent');
  else if (isbot(ua)) reasons.push('bot_user_agent');
  if (advancedSignals) {
    const languages = advancedSignals.languages;
    if (Array.isArray(languages) && languages.length === 0) reasons.push('no_languages');
    const screen = advancedSignals.screen as { width?: unknown; height?: unknown } | undefined;
    if (screen && (screen.width === 0 || screen.height === 0)) reasons.push('zero_screen');
    if (advancedSignals.automation === true) reasons.push('automation_globals');
  }
  return { isBot: reasons.length > 0, reasons };
}

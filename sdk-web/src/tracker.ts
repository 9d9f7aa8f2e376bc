// Page views, including single-page apps: one call per URL change, whether it comes from
// pushState, replaceState, back/forward (popstate) or a hash change.
export type PageHandler = (url: string, referrer: string) => void;

export function watchPages(onPage: PageHandler): void {
  let last = location.href;
  const check = () => {
    const url = location.href;
    if (url === last) return;
    const previous = last;
    last = url;
    onPage(url, previous);
  };
  for (const method of ['pushState', 'replaceState'] as const) {
    const original = history[method];
    history[method] = function (this: History, ...args: Parameters<History['pushState']>) {
      const result = original.apply(this, args);
      try {
        check();
      } catch {}
      return result;
    };
  }
  addEventListener('popstate', check);
  addEventListener('hashchange', check);
  onPage(last, document.referrer);
}

/** Basic signals for bot detection. */
export function basicSignals() {
  return { js_enabled: true, language: navigator.language, webdriver: navigator.webdriver === true };
}

/** Advanced signals: sent only when the app is in attested advanced mode (visitors were told). */
export function advancedSignals() {
  const w = window as unknown as Record<string, unknown>;
  return {
    languages: [...(navigator.languages ?? [])],
    screen: { width: screen.width, height: screen.height },
    hardware_concurrency: navigator.hardwareConcurrency ?? null,
    timezone: Intl.DateTimeFormat().resolvedOptions().timeZone,
    touch_points: navigator.maxTouchPoints ?? 0,
    // biome-ignore lint/complexity/useLiteralKeys: quoted so the build's _-property shortening leaves these page globals alone
    automation: Boolean(w['_phantom'] || w.callPhantom || w['__nightmare'] || w.domAutomation),
  };
}

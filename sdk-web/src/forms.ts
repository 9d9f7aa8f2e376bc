// Form hooking: one capturing `submit` listener on the document sees every form, including forms
// added later. A form is handled when it was registered by hand, or (with autoHook) when it is
// flagged data-service="true" or has an email input. It only reads fields: it never prevents or
// delays the submission, and nothing it does can throw into the page.
export interface FormOptions {
  appId?: string;
  apiBase?: string;
  /** Path of the users endpoint (default /v1/website/users). */
  endpoint?: string;
  /** Sent as websiteUrl (default the page origin). */
  websiteUrl?: string;
  /** Name of the input holding the email. */
  emailField?: string;
}

export interface AutoHook {
  emailField?: string;
  emailSelectors?: string[];
}

export interface FormFields {
  email: string;
  firstName?: string;
  lastName?: string;
  name?: string;
}

export type SubmitHandler = (form: HTMLFormElement, fields: FormFields | null, options: FormOptions) => void;

const registered = new WeakMap<HTMLFormElement, FormOptions>();
let auto: () => AutoHook | null = () => null;
let handler: SubmitHandler | null = null;

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

function value(form: HTMLFormElement, selector: string): string | undefined {
  try {
    const el = form.querySelector<HTMLInputElement>(selector);
    const v = el && el.type !== 'password' ? el.value?.trim() : '';
    return v || undefined;
  } catch {
    return undefined; // an invalid selector from the options
  }
}

const named = (names: string[], autocomplete: string) =>
  [...names.map((n) => `input[name="${n}" i]`), `input[autocomplete="${autocomplete}"]`].join(',');

function emailInputs(field: string | undefined, selectors: string[]): string[] {
  return [
    ...(field ? [`[name="${field.replace(/["\\]/g, '\\$&')}"]`] : []),
    ...selectors,
    'input[type="email"]',
    'input[name*="email" i]',
  ];
}

/** The email, names and such a form holds, or null when it has no valid email. */
export function readFields(form: HTMLFormElement, field?: string, selectors: string[] = []): FormFields | null {
  let email: string | undefined;
  for (const s of emailInputs(field, selectors)) {
    const v = value(form, s);
    if (v && EMAIL.test(v)) {
      email = v;
      break;
    }
  }
  if (!email) return null;
  return {
    email,
    firstName: value(form, named(['firstName', 'first_name', 'firstname', 'fname', 'given_name'], 'given-name')),
    lastName: value(form, named(['lastName', 'last_name', 'lastname', 'lname', 'family_name'], 'family-name')),
    name: value(form, named(['name', 'fullName', 'full_name', 'fullname'], 'name')),
  };
}

function hasEmailInput(form: HTMLFormElement, hook: AutoHook): boolean {
  return emailInputs(hook.emailField, hook.emailSelectors ?? []).some((s) => {
    try {
      return form.querySelector(s) !== null;
    } catch {
      return false;
    }
  });
}

function onSubmit(event: Event): void {
  try {
    const form = event.target;
    if (!(form instanceof HTMLFormElement) || !handler) return;
    const flag = form.getAttribute('data-service');
    const manual = registered.get(form);
    const hook = auto();
    const appId = form.getAttribute('data-service-app-id') ?? undefined;
    let options: FormOptions | undefined = manual;
    if (!options && hook && flag !== 'false' && (flag === 'true' || hasEmailInput(form, hook))) {
      options = { emailField: hook.emailField };
    }
    if (!options) return;
    if (appId) options = { ...options, appId };
    handler(form, readFields(form, options.emailField ?? hook?.emailField, hook?.emailSelectors), options);
  } catch {}
}

/** Installs the document listener once; `autoHook` says whether unregistered forms qualify. */
export function listen(onForm: SubmitHandler, autoHook: () => AutoHook | null): void {
  auto = autoHook;
  if (!handler) document.addEventListener('submit', onSubmit, true);
  handler = onForm;
}

export function registerForm(form: HTMLFormElement, options: FormOptions = {}): void {
  registered.set(form, options);
}

// Small pieces of the page's markup. Every value goes through the report's `html` template, which
// escapes it: agent, model and suite text is shown as text, never parsed as markup.

import { html } from '/runs/page/modules/suites/report/html/kit.js';
import { badge } from '/runs/page/modules/suites/report/html/parts.js';

export { badge, html };

/** Markup built with `html` into an element (the one place the page writes markup). */
export const show = (element, fragment) => {
  // eslint-disable-next-line no-restricted-properties -- the one sink: markup the report's `html` template built, every value in it escaped
  element.innerHTML = fragment.markup;
};

/** `agent:coach.3` → `coach.3`. */
export const agentName = (ref) => (typeof ref === 'string' ? ref.replace(/^agent:/, '') : '–');

/** baseline → candidate for a comparison, the agent for a run. */
export const agentsText = (run) => (run.baseline === null ? agentName(run.agent) : `${agentName(run.baseline)} → ${agentName(run.agent)}`);

/** A progress bar a screen reader reads as "12 of 40". */
export const bar = (done, total, label) =>
  html`<progress max="${Math.max(total, 1)}" value="${Math.min(done, total)}" aria-label="${label}">${done} of ${total}</progress>`;

/** The verdict of a run as the list shows it: the status said as a result. */
export const VERDICT = {
  running: ['running', 'running'],
  passed: ['passed', '✓ passed'],
  failed: ['failed', '✗ failed'],
  error: ['error', '! error'],
  cancelled: ['skipped', 'cancelled'],
};

export const statusBadge = (status) => badge(...(VERDICT[status] ?? ['skipped', status]));

export const errorBox = (err) =>
  html`<div class="card problem-box" role="alert"><b>${err.code ?? 'error'}</b> ${err.message ?? String(err)}</div>`;

export const signInForm = (message) =>
  html`<form id="sign-in" class="card sign-in">
    <h1>Sign in to read runs</h1>
    <p>
      Your Promethist platform access token: the page reads runs through the API with it. It stays in this tab (sessionStorage) until you
      sign out or close the tab; it never goes into a URL or a cookie.
    </p>
    ${message === undefined ? '' : html`<p class="problem" role="alert">${message}</p>`}
    <label for="token">Access token</label>
    <input id="token" name="token" type="password" autocomplete="off" required />
    <button type="submit">Sign in</button>
  </form>`;

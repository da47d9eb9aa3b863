// The runs page: /runs (the list) and /runs/{id} (one run). Asks for the reader's token once per
// tab, then shows the page the path names; "Sign out" forgets the token.

import { signIn, signOut, token } from '/runs/page/api.js';
import { showList } from '/runs/page/list.js';
import { showRun } from '/runs/page/run.js';
import { errorBox, show, signInForm } from '/runs/page/views.js';

// The page's own timings (DevTools' performance panel shows them; bench/runs-page.ts reads them):
// `runs-page:modules` here, once every module is loaded; `runs-page:view` and `runs-page:report` in run.js.
performance.mark('runs-page:modules');

const main = document.querySelector('#main');
const signOutButton = document.querySelector('#sign-out');
let current = new AbortController();

function askToken(message) {
  signOutButton.hidden = true;
  show(main, signInForm(message));
  const form = main.querySelector('#sign-in');
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const value = String(new FormData(form).get('token') ?? '').trim();
    if (value === '') return;
    signIn(value);
    route();
  });
  main.querySelector('#token').focus();
}

async function route() {
  current.abort();
  current = new AbortController();
  const { signal } = current;
  if (token() === null) return askToken();
  signOutButton.hidden = false;
  const match = /^\/runs\/([^/]+)$/.exec(location.pathname);
  try {
    await (match === null ? showList(main, signal) : showRun(main, decodeURIComponent(match[1]), signal));
  } catch (err) {
    if (signal.aborted) return;
    if (err.status === 401) {
      signOut();
      return askToken('The gateway did not accept that token: sign in again.');
    }
    show(main, errorBox(err));
  }
}

signOutButton.addEventListener('click', () => {
  signOut();
  route();
});
// The list keeps its filters in the hash; a run keeps the open attempt there (and handles it itself).
window.addEventListener('hashchange', () => {
  if (location.pathname === '/runs') route();
});
route();

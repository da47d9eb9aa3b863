// The runs page: /runs (the list) and /runs/{id} (one run). Asks for the reader's token once per
// tab, then shows the page the path names; "Sign out" forgets the token.

import { readEarly, signIn, signOut, token } from '/runs/page/api.js';

/** The run `/runs/{id}` names, or null on the list. */
const runId = () => {
  const match = /^\/runs\/([^/]+)$/.exec(location.pathname);
  return match === null ? null : decodeURIComponent(match[1]);
};

// The run's view is asked for now, while the browser still fetches the page's other modules
// (index.html preloads them all): for a big run it is most of the wait, and the two overlap.
if (token() !== null && runId() !== null) readEarly(`/v1/runs/${runId()}`);
const [{ showList }, { showRun }, { errorBox, show, signInForm }] = await Promise.all([
  import('/runs/page/list.js'),
  import('/runs/page/run.js'),
  import('/runs/page/views.js'),
]);

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
  const id = runId();
  try {
    await (id === null ? showList(main, signal) : showRun(main, id, signal));
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

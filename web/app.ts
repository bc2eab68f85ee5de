import { html, render } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { savedSession, saveSession, type Session } from './api.js';
import { Approvals } from './pages/approvals.js';
import { BuyDetail } from './pages/buy-detail.js';
import { Buys } from './pages/buys.js';
import { NewBuy } from './pages/new-buy.js';
import { SignIn } from './pages/sign-in.js';
import { Webhooks } from './pages/webhooks.js';

/** The page the hash names (`#/buys`, `#/buys/<id>`, `#/approvals`, `#/webhooks`). */
function useRoute(): string {
  const [route, setRoute] = useState(location.hash.slice(1) || '/');
  useEffect(() => {
    const onChange = () => setRoute(location.hash.slice(1) || '/');
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return route;
}

const isOperator = (s: Session) => s.role === 'seller' || s.role === 'admin';

function Page({ session, route }: { session: Session; route: string }) {
  if (route === '/buys/new') return html`<${NewBuy} />`;
  const buy = /^\/buys\/(.+)$/.exec(route);
  if (buy) return html`<${BuyDetail} id=${decodeURIComponent(buy[1]!)} />`;
  if (route === '/approvals' && isOperator(session)) return html`<${Approvals} />`;
  if (route === '/webhooks' && !isOperator(session)) return html`<${Webhooks} />`;
  if (route === '/buys' || !isOperator(session)) return html`<${Buys} />`;
  return html`<${Approvals} />`;
}

function App() {
  const [session, setSession] = useState<Session | null>(savedSession());
  const route = useRoute();
  if (!session) {
    return html`<${SignIn}
      onSignedIn=${(s: Session) => {
        saveSession(s);
        setSession(s);
      }}
    />`;
  }
  const signOut = () => {
    saveSession(null);
    setSession(null);
  };
  const link = (href: string, label: string) => html`<a href=${href} aria-current=${route === href.slice(1) ? 'page' : undefined}>${label}</a>`;
  return html`<div class="shell">
    <header>
      <strong>adcp-gateway</strong>
      <nav aria-label="Main">
        ${link('#/buys', 'Media buys')}
        ${isOperator(session) ? link('#/approvals', 'Approvals') : link('#/webhooks', 'Webhooks')}
      </nav>
      <span class="who">${session.org} · ${session.role}</span>
      <button type="button" class="secondary" onClick=${signOut}>Sign out</button>
    </header>
    <main id="content"><${Page} session=${session} route=${route} /></main>
  </div>`;
}

const root = document.getElementById('app')!;
root.textContent = ''; // the "Loading…" placeholder: Preact renders next to what is there
render(html`<${App} />`, root);

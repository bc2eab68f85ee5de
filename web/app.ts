import { html, render } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { savedSession, saveSession, type Session } from './api.js';
import { Approvals } from './pages/approvals.js';
import { BuyDetail } from './pages/buy-detail.js';
import { Buys } from './pages/buys.js';
import { Catalog } from './pages/catalog.js';
import { Products } from './pages/products.js';
import { NewBuy } from './pages/new-buy.js';
import { Registry } from './pages/registry.js';
import { SignIn } from './pages/sign-in.js';
import { Webhooks } from './pages/webhooks.js';

/** The page the hash names (`#/buys`, `#/buys/<id>`, `#/buys/new?products=a,b`, `#/approvals`): its path and its query. */
function useRoute(): { path: string; query: URLSearchParams } {
  const read = () => {
    const [path, query] = (location.hash.slice(1) || '/').split('?');
    return { path: path || '/', query: new URLSearchParams(query ?? '') };
  };
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const onChange = () => setRoute(read());
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return route;
}

const isOperator = (s: Session) => s.role === 'seller' || s.role === 'admin';

function Page({ session, route }: { session: Session; route: { path: string; query: URLSearchParams } }) {
  const path = route.path;
  if (path === '/registry' || path.startsWith('/registry/')) return html`<${Registry} route=${path} session=${session} />`;
  if (path === '/buys/new') return html`<${NewBuy} products=${(route.query.get('products') ?? '').split(',').filter(Boolean)} />`;
  const buy = /^\/buys\/(.+)$/.exec(path);
  if (buy) return html`<${BuyDetail} id=${decodeURIComponent(buy[1]!)} operator=${isOperator(session)} />`;
  if (path === '/products' && !isOperator(session)) return html`<${Products} />`;
  if (path === '/approvals' && isOperator(session)) return html`<${Approvals} />`;
  if (path === '/catalog' && isOperator(session)) return html`<${Catalog} />`;
  if (path === '/webhooks' && !isOperator(session)) return html`<${Webhooks} />`;
  if (path === '/buys' || !isOperator(session)) return html`<${Buys} operator=${isOperator(session)} />`;
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
  const link = (href: string, label: string) => html`<a href=${href} aria-current=${route.path === href.slice(1) || route.path.startsWith(`${href.slice(1)}/`) ? 'page' : undefined}>${label}</a>`;
  return html`<div class="shell">
    <header>
      <strong>adcp-gateway</strong>
      <nav aria-label="Main">
        ${isOperator(session) ? null : link('#/products', 'Products')}
        ${link('#/buys', 'Media buys')}
        ${isOperator(session) ? link('#/approvals', 'Approvals') : null}
        ${isOperator(session) ? link('#/catalog', 'Catalog') : link('#/webhooks', 'Webhooks')}
        ${link('#/registry', 'Registry')}
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

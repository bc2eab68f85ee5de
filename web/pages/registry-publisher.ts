import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { gql } from '../api.js';
import { Failure, Loading } from '../ui.js';
import { failureOf, when } from './registry-ui.js';

interface Publisher {
  domain: string;
  adagentsValid: boolean;
  lastCheckTransient: boolean;
  checkedAt: string;
  error: string | null;
  findings: { severity: 'ERROR' | 'WARNING'; field: string; message: string; suggestion: string | null }[];
  discoveryMethod: string | null;
  authority: string | null;
  managerDomain: string | null;
  authorizedAgents: { url: string; authorizedFor: string | null; authorizationType: string | null }[];
  properties: { propertyId: string | null; propertyType: string | null; name: string | null; identifiers: { type: string; value: string }[] }[];
}

const FIELDS = `domain adagentsValid lastCheckTransient checkedAt error findings { severity field message suggestion } discoveryMethod authority managerDomain
  authorizedAgents { url authorizedFor authorizationType } properties { propertyId propertyType name identifiers { type value } }`;

function Verdict({ publisher }: { publisher: Publisher }) {
  const errors = publisher.findings.filter((f) => f.severity === 'ERROR').length;
  const warnings = publisher.findings.length - errors;
  return html`<article class="card" data-publisher=${publisher.domain} aria-labelledby="verdict-title">
    <h3 id="verdict-title">
      ${publisher.domain}:${' '}<span class=${`status ${publisher.adagentsValid ? 'status-active' : 'status-rejected'}`} data-verdict=${publisher.adagentsValid ? 'valid' : 'invalid'}>
        adagents.json ${publisher.adagentsValid ? 'valid' : 'invalid'}
      </span>
    </h3>
    <p class="muted">
      Checked ${when(publisher.checkedAt)}${publisher.discoveryMethod ? ` · found ${publisher.discoveryMethod.replace(/_/g, ' ')}` : ''}${publisher.managerDomain ? ` · managed by ${publisher.managerDomain}` : ''}
    </p>
    ${publisher.error ? html`<p>${publisher.lastCheckTransient ? 'The last check could not read the file, so the verdict is the one before it: ' : ''}${publisher.error}</p>` : null}
    <h4>Findings (${errors} ${errors === 1 ? 'error' : 'errors'}, ${warnings} ${warnings === 1 ? 'warning' : 'warnings'})</h4>
    ${publisher.findings.length === 0
      ? html`<p class="muted">No findings.</p>`
      : html`<ul class="findings">
          ${publisher.findings.map(
            (f) => html`<li data-severity=${f.severity.toLowerCase()}>
              <strong class=${f.severity === 'ERROR' ? 'error' : ''}>${f.severity === 'ERROR' ? 'Error' : 'Warning'}</strong> at <code>${f.field}</code>: ${f.message}${f.suggestion ? html` <span class="muted">Suggestion: ${f.suggestion}</span>` : null}
            </li>`,
          )}
        </ul>`}
    <h4>Authorized agents (${publisher.authorizedAgents.length})</h4>
    ${publisher.authorizedAgents.length === 0
      ? html`<p class="muted">${publisher.adagentsValid || publisher.lastCheckTransient ? 'None.' : 'None: the registry keeps no authorization from a file it found invalid.'}</p>`
      : html`<ul class="plain">${publisher.authorizedAgents.map((a) => html`<li><code>${a.url}</code>${a.authorizedFor ? ` — ${a.authorizedFor}` : ''}${a.authorizationType ? html` <span class="muted">(${a.authorizationType})</span>` : null}</li>`)}</ul>`}
    <h4>Properties (${publisher.properties.length})</h4>
    ${publisher.properties.length === 0
      ? html`<p class="muted">None declared.</p>`
      : html`<ul class="plain">${publisher.properties.map((p) => html`<li>${p.name ?? p.propertyId ?? 'unnamed'}${p.propertyType ? ` (${p.propertyType})` : ''}${p.identifiers.length ? html`: <code>${p.identifiers.map((i) => i.value).join(', ')}</code>` : null}</li>`)}</ul>`}
  </article>`;
}

/** A publisher's adagents.json verdict with its findings; admins may revalidate it now. */
export function PublisherVerdict({ admin }: { admin: boolean }) {
  const [domain, setDomain] = useState('');
  const [state, setState] = useState<{ busy?: 'look' | 'revalidate'; publisher?: Publisher | null; asked?: string; error?: string; field?: string }>({});
  const run = async (kind: 'look' | 'revalidate') => {
    const d = domain.trim().toLowerCase();
    if (!d) return setState({ error: 'Enter a publisher domain.', field: 'domain' });
    setState((s) => ({ ...s, busy: kind, error: undefined, field: undefined }));
    try {
      const publisher =
        kind === 'look'
          ? (await gql<{ publisher: Publisher | null }>(`query($d: String!) { publisher(domain: $d) { ${FIELDS} } }`, { d })).publisher
          : (await gql<{ revalidatePublisher: Publisher }>(`mutation($d: String!) { revalidatePublisher(domain: $d) { ${FIELDS} } }`, { d })).revalidatePublisher;
      setState({ publisher, asked: d });
    } catch (err) {
      const f = failureOf(err);
      setState((s) => ({ ...s, busy: undefined, error: f.message, field: f.field }));
    }
  };
  const invalid = Boolean(state.error && state.field === 'domain');
  return html`<section aria-labelledby="publisher-title">
    <h2 id="publisher-title">Publisher verdict</h2>
    <form onSubmit=${(e: Event) => { e.preventDefault(); void run('look'); }} noValidate>
      <label for="publisher-domain">Publisher domain</label>
      <input id="publisher-domain" name="domain" required placeholder="publisher.example" value=${domain} onInput=${(e: Event) => setDomain((e.target as HTMLInputElement).value)}
        aria-invalid=${invalid ? 'true' : undefined} aria-describedby=${invalid ? 'publisher-domain-error' : undefined} />
      ${invalid ? html`<p id="publisher-domain-error" class="error" role="alert">${state.error}</p>` : null}
      <div class="actions">
        <button type="submit" disabled=${Boolean(state.busy)}>${state.busy === 'look' ? 'Checking…' : 'Show verdict'}</button>
        ${admin ? html`<button type="button" class="secondary" disabled=${Boolean(state.busy)} onClick=${() => run('revalidate')}>${state.busy === 'revalidate' ? 'Revalidating…' : 'Revalidate now'}</button>` : null}
      </div>
    </form>
    ${state.error && !invalid ? html`<${Failure} error=${state.error} />` : null}
    ${state.busy ? html`<${Loading} />` : null}
    ${state.publisher ? html`<${Verdict} publisher=${state.publisher} />` : null}
    ${state.publisher === null ? html`<p role="status"><strong>Not found.</strong> ${state.asked} has never been revalidated${admin ? '; revalidate it to fetch its adagents.json.' : '.'}</p>` : null}
  </section>`;
}

import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { gql } from '../api.js';
import { Failure, Loading, useQuery } from '../ui.js';
import { failureOf } from './registry-ui.js';

interface Storyboard {
  id: string;
  title: string;
  category: string;
  summary: string;
  adcpVersion: string;
  testKit: { id: string; name: string | null } | null;
  phases: { id: string; title: string; narrative: string; steps: { id: string; title: string; description: string; expectedOutput: string; task: string | null; validationCount: number }[] }[];
}

const QUERY = `query($id: String!) { storyboard(id: $id) { id title category summary adcpVersion testKit { id name }
  phases { id title narrative steps { id title description expectedOutput task validationCount } } } }`;

function StoryboardView({ storyboard }: { storyboard: Storyboard }) {
  const steps = storyboard.phases.reduce((n, p) => n + p.steps.length, 0);
  return html`<article data-storyboard=${storyboard.id} aria-labelledby="storyboard-view-title">
    <h3 id="storyboard-view-title">${storyboard.title || storyboard.id}</h3>
    <p class="muted"><code>${storyboard.id}</code> · ${storyboard.category} · compliance ${storyboard.adcpVersion} · ${storyboard.phases.length} phases, ${steps} steps${storyboard.testKit ? ` · test kit ${storyboard.testKit.name ?? storyboard.testKit.id}` : ''}</p>
    <p>${storyboard.summary}</p>
    ${storyboard.phases.map(
      (phase, i) => html`<section class="phase" aria-labelledby=${`phase-${i}`}>
        <h4 id=${`phase-${i}`}>Phase ${i + 1}: ${phase.title || phase.id}</h4>
        ${phase.narrative ? html`<p class="muted">${phase.narrative}</p>` : null}
        <ol class="steps">
          ${phase.steps.map(
            (step) => html`<li data-step=${step.id}>
              <strong>${step.title || step.id}</strong>${step.task ? html` — <code>${step.task}</code>` : null}
              <p>${step.description}</p>
              ${step.expectedOutput
                ? html`<details>
                    <summary>Expected answer${step.validationCount ? ` (${step.validationCount} checks)` : ''}</summary>
                    <p>${step.expectedOutput}</p>
                  </details>`
                : null}
            </li>`,
          )}
        </ol>
      </section>`,
    )}
  </article>`;
}

/** A compliance storyboard, picked from the bundle's list or entered by id, with its phases and steps. */
export function StoryboardViewer() {
  const list = useQuery<{ storyboards: { id: string; title: string }[] }>('{ storyboards { id title } }', {});
  const [id, setId] = useState('');
  const [state, setState] = useState<{ busy?: boolean; storyboard?: Storyboard; error?: string; field?: string }>({});
  const open = async (e: Event) => {
    e.preventDefault();
    if (!id.trim()) return setState({ error: 'Enter or pick a storyboard id.', field: 'id' });
    setState({ busy: true });
    try {
      setState({ storyboard: (await gql<{ storyboard: Storyboard }>(QUERY, { id: id.trim() })).storyboard });
    } catch (err) {
      const f = failureOf(err);
      setState({ error: f.message, field: f.field });
    }
  };
  const invalid = Boolean(state.error && state.field === 'id');
  return html`<section aria-labelledby="storyboards-title">
    <h2 id="storyboards-title">Storyboards</h2>
    <form onSubmit=${open} noValidate>
      <label for="storyboard-id">Storyboard id</label>
      <p id="storyboard-id-hint" class="muted hint">${list.data ? `Type to pick one of ${list.data.storyboards.length}.` : list.error ? 'The list could not be loaded; enter an id.' : 'Loading the list…'}</p>
      <input id="storyboard-id" name="id" list="storyboard-ids" autocomplete="off" required value=${id} onInput=${(e: Event) => setId((e.target as HTMLInputElement).value)}
        aria-invalid=${invalid ? 'true' : undefined} aria-describedby=${invalid ? 'storyboard-id-hint storyboard-id-error' : 'storyboard-id-hint'} />
      <datalist id="storyboard-ids">${(list.data?.storyboards ?? []).map((s) => html`<option value=${s.id}>${s.title}</option>`)}</datalist>
      ${invalid ? html`<p id="storyboard-id-error" class="error" role="alert">${state.error}</p>` : null}
      <div><button type="submit" disabled=${state.busy}>${state.busy ? 'Opening…' : 'Open'}</button></div>
    </form>
    ${state.error && !invalid ? html`<${Failure} error=${state.error} />` : null}
    ${state.busy ? html`<${Loading} />` : null}
    ${state.storyboard ? html`<${StoryboardView} storyboard=${state.storyboard} />` : null}
  </section>`;
}

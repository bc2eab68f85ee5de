import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { gql, GraphQLFailure, savedSession } from '../api.js';
import { Failure, Loading, useQuery } from '../ui.js';
import { describedBy, Field, FieldError, useForm, type FormErrors } from '../form.js';
import { linkHref } from '../links.js';

export interface CreativeView {
  id: string;
  name: string;
  status: string;
  formatType: string;
  format: { agentUrl: string; id: string };
  url: string | null;
  assignments: { packageId: string; assignedAt: string }[];
}

export const CREATIVE_FIELDS = 'id name status formatType format { agentUrl id } url assignments { packageId assignedAt }';

interface FormatChoice {
  formatId: { agentUrl: string; id: string };
  name: string;
  type: string;
}

type Package = { id: string; productId: string };

/** One creative as a card: what it is, where its file is, the packages it runs in. */
export function CreativeCard({ creative: c, packages }: { creative: CreativeView; packages?: Package[] }) {
  const name = (id: string) => packages?.find((p) => p.id === id)?.productId ?? id;
  return html`<li class="card" data-creative=${c.id}>
    <h4>${c.name}</h4>
    <p><span class="status" data-status=${c.status}>${c.status}</span> ${c.format.id} (${c.formatType})</p>
    ${c.url ? html`<p class="wrap">${linkHref(c.url) ? html`<a href=${linkHref(c.url)} rel="noreferrer noopener" target="_blank">${c.url}</a>` : c.url}</p>` : null}
    <p class="muted">${c.assignments.length === 0 ? 'Not assigned' : `Assigned to ${c.assignments.map((a) => name(a.packageId)).join(', ')}`}</p>
  </li>`;
}

/** A buy's creatives, a form to sync a new one, and one to assign a creative of the library to its packages. */
export function BuyCreatives({ id, packages }: { id: string; packages: Package[] }) {
  // A seller reading the buy sees its creatives; only the buyer has a library to sync to and assign from.
  const buyer = savedSession()?.role === 'buyer';
  const { data, error, reload } = useQuery<{ mediaBuy: { creatives: CreativeView[] } | null; creativesConnection?: { edges: { node: { id: string; name: string } }[] } }>(
    `query($id: ID!, $buyer: Boolean!) { mediaBuy(id: $id) { creatives(first: 50) { ${CREATIVE_FIELDS} } } creativesConnection(first: 100) @include(if: $buyer) { edges { node { id name } } } }`,
    { id, buyer },
    { subscription: 'subscription($ids: [String!]) { mediaBuyUpdated(ids: $ids) { position } }', variables: { ids: [id] } },
  );
  return html`<section aria-labelledby="creatives-title" class="panel">
    <h3 id="creatives-title">Creatives</h3>
    ${error && !data ? html`<${Failure} error=${error} />` : !data ? html`<${Loading} />` : (data.mediaBuy?.creatives.length ?? 0) === 0
      ? html`<p class="muted">No creative is assigned to this buy yet.</p>`
      : html`<ul class="cards">${data.mediaBuy!.creatives.map((c) => html`<${CreativeCard} creative=${c} packages=${packages} />`)}</ul>`}
    ${buyer ? html`<${SyncCreativeForm} packages=${packages} onSynced=${reload} />` : null}
    ${buyer && data?.creativesConnection ? html`<${AssignForm} packages=${packages} library=${data.creativesConnection.edges.map((e) => e.node)} onAssigned=${reload} />` : null}
  </section>`;
}

/** Package checkboxes as one labelled group, its error tied to the group. */
function PackagePicker({ prefix, packages, chosen, onChange, errors }: { prefix: string; packages: Package[]; chosen: string[]; onChange: (ids: string[]) => void; errors: FormErrors }) {
  return html`<fieldset ...${describedBy(`${prefix}-packages`, errors, 'packages')}>
    <legend>Assign to packages</legend>
    ${packages.map(
      (p) => html`<label class="check"><input type="checkbox" checked=${chosen.includes(p.id)} onChange=${(e: Event) => onChange((e.target as HTMLInputElement).checked ? [...chosen, p.id] : chosen.filter((c) => c !== p.id))} /> ${p.productId}</label>`,
    )}
    <${FieldError} id=${`${prefix}-packages`} errors=${errors} name="packages" />
  </fieldset>`;
}

/** Where a sync's error belongs: the input its `extensions.field` names. */
function syncInputOf(field: string | undefined): string | undefined {
  if (field === 'name') return 'name';
  if (field === 'formatId') return 'format';
  if (field === 'assetUrl') return 'url';
  if (field === 'durationMs') return 'duration';
  if (field?.startsWith('packageIds')) return 'packages';
  return undefined;
}

function SyncCreativeForm({ packages, onSynced }: { packages: Package[]; onSynced: () => void }) {
  const formats = useQuery<{ creativeFormats: FormatChoice[] }>('{ creativeFormats { formatId { agentUrl id } name type } }', {});
  const form = useForm({ name: '', format: '', url: '', duration: '' });
  const { values, errors, set } = form;
  const [chosen, setChosen] = useState<string[]>([]);
  // Formats whose assets a single file fills (a catalog-driven one needs a catalog, not a URL).
  const choices = (formats.data?.creativeFormats ?? []).filter((f) => f.type === 'display' || f.type === 'video');
  const format = choices.find((f) => `${f.formatId.agentUrl}|${f.formatId.id}` === values.format);
  const submit = form.onSubmit(async () => {
    const [agentUrl, id] = values.format.split('|');
    const input = {
      name: values.name.trim(),
      formatId: { agentUrl: agentUrl ?? '', id: id ?? '' },
      assetUrl: values.url.trim(),
      ...(format?.type === 'video' && values.duration ? { durationMs: Math.round(Number(values.duration) * 1000) } : {}),
      ...(chosen.length ? { packageIds: chosen } : {}),
    };
    const { syncCreative } = await gql<{ syncCreative: { action: string; taskId: string | null; creative: { id: string } | null } }>('mutation($i: CreativeInput!) { syncCreative(input: $i) { action taskId creative { id } } }', { i: input });
    form.setValues({ name: '', format: values.format, url: '', duration: '' });
    setChosen([]);
    onSynced();
    return syncCreative.taskId ? `Sent for the seller’s review (task ${syncCreative.taskId}).` : `Creative ${syncCreative.creative?.id ?? ''} ${syncCreative.action}.`;
  }, syncInputOf);
  const field = (name: string, label: string, input: unknown) => html`<${Field} id=${`creative-${name}`} label=${label} errors=${errors} name=${name}>${input}<//>`;
  return html`<form aria-labelledby="sync-title" onSubmit=${submit} noValidate>
    <h4 id="sync-title">Sync a creative</h4>
    ${errors.form ? html`<${Failure} error=${errors.form} />` : null}
    ${formats.error && !formats.data ? html`<${Failure} error=${formats.error} />` : null}
    ${field('name', 'Creative name', html`<input ...${describedBy('creative-name', errors, 'name')} required value=${values.name} onInput=${set('name')} />`)}
    ${field('format', 'Format', html`<select ...${describedBy('creative-format', errors, 'format')} required value=${values.format} onChange=${set('format')}>
      <option value="">${formats.data ? 'Choose a format…' : 'Loading formats…'}</option>
      ${choices.map((f) => html`<option value=${`${f.formatId.agentUrl}|${f.formatId.id}`}>${f.name} (${f.type})</option>`)}
    </select>`)}
    ${field('url', 'Asset URL', html`<input ...${describedBy('creative-url', errors, 'url')} type="url" inputmode="url" placeholder="https://cdn.example/file" required value=${values.url} onInput=${set('url')} />`)}
    ${format?.type === 'video' ? field('duration', 'Duration (seconds)', html`<input ...${describedBy('creative-duration', errors, 'duration')} type="number" inputmode="decimal" min="1" value=${values.duration} onInput=${set('duration')} />`) : null}
    ${packages.length ? html`<${PackagePicker} prefix="creative" packages=${packages} chosen=${chosen} onChange=${setChosen} errors=${errors} />` : null}
    <button type="submit" disabled=${form.busy}>${form.busy ? 'Syncing…' : 'Sync the creative'}</button>
    ${form.done ? html`<p role="status" class="muted">${form.done}</p>` : null}
  </form>`;
}

function AssignForm({ packages, library, onAssigned }: { packages: Package[]; library: { id: string; name: string }[]; onAssigned: () => void }) {
  const form = useForm({ creative: '' });
  const { values, errors } = form;
  const [chosen, setChosen] = useState<string[]>([]);
  if (library.length === 0 || packages.length === 0) return null;
  const submit = form.onSubmit(
    async () => {
      if (!values.creative) throw new GraphQLFailure('Choose a creative', 'VALIDATION_ERROR', 'creativeIds');
      if (chosen.length === 0) throw new GraphQLFailure('Choose at least one package', 'VALIDATION_ERROR', 'packageIds');
      await gql('mutation($i: CreativeAssignmentInput!) { assignCreatives(input: $i) { id assignments { packageId } } }', { i: { creativeIds: [values.creative], packageIds: chosen } });
      setChosen([]);
      onAssigned();
      return 'Assigned.';
    },
    (field) => (field?.startsWith('creativeIds') ? 'creative' : field?.startsWith('packageIds') ? 'packages' : undefined),
  );
  return html`<form aria-labelledby="assign-title" onSubmit=${submit} noValidate>
    <h4 id="assign-title">Assign a creative from your library</h4>
    ${errors.form ? html`<${Failure} error=${errors.form} />` : null}
    <${Field} id="assign-creative" label="Creative" errors=${errors} name="creative">
      <select ...${describedBy('assign-creative', errors, 'creative')} value=${values.creative} onChange=${form.set('creative')}>
        <option value="">Choose a creative…</option>
        ${library.map((c) => html`<option value=${c.id}>${c.name} (${c.id})</option>`)}
      </select>
    <//>
    <${PackagePicker} prefix="assign" packages=${packages} chosen=${chosen} onChange=${setChosen} errors=${errors} />
    <button type="submit" disabled=${form.busy}>${form.busy ? 'Assigning…' : 'Assign'}</button>
    ${form.done ? html`<p role="status" class="muted">${form.done}</p>` : null}
  </form>`;
}

/** The buyer's whole creative library, a page at a time. */
export function CreativeLibrary() {
  const [after, setAfter] = useState<string[]>([]);
  const { data, error } = useQuery<{ creativesConnection: { edges: { node: CreativeView }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } } }>(
    `query($a: String) { creativesConnection(first: 20, after: $a) { edges { node { ${CREATIVE_FIELDS} } } pageInfo { hasNextPage endCursor } } }`,
    { a: after.at(-1) ?? null },
  );
  return html`<section aria-labelledby="library-title">
    <h2 id="library-title">Creative library</h2>
    ${error && !data ? html`<${Failure} error=${error} />` : !data ? html`<${Loading} />` : data.creativesConnection.edges.length === 0
      ? html`<p class="muted">No creatives yet: sync one on a media buy’s page.</p>`
      : html`<ul class="cards">${data.creativesConnection.edges.map((e) => html`<${CreativeCard} creative=${e.node} />`)}</ul>
        <div class="actions">
          ${after.length ? html`<button type="button" class="secondary" onClick=${() => setAfter(after.slice(0, -1))}>Previous page</button>` : null}
          ${data.creativesConnection.pageInfo.hasNextPage ? html`<button type="button" class="secondary" onClick=${() => setAfter([...after, data.creativesConnection.pageInfo.endCursor!])}>Next page</button>` : null}
        </div>`}
  </section>`;
}

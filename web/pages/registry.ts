import { html } from 'htm/preact';
import type { Session } from '../api.js';
import { BrandLookup } from './registry-brands.js';
import { ChangeFeed } from './registry-feed.js';
import { PublisherVerdict } from './registry-publisher.js';
import { StoryboardViewer } from './registry-storyboards.js';

const SECTIONS = [
  ['brands', 'Brands'],
  ['publisher', 'Publishers'],
  ['storyboards', 'Storyboards'],
  ['feed', 'Change feed'],
] as const;

/** The registry (every role): brand lookup, publisher verdicts, storyboards and the live change feed, one `#/registry/<section>` each. */
export function Registry({ route, session }: { route: string; session: Session }) {
  const section = route.split('/')[2] || 'brands';
  const page =
    section === 'publisher'
      ? html`<${PublisherVerdict} admin=${session.role === 'admin'} />`
      : section === 'storyboards'
        ? html`<${StoryboardViewer} />`
        : section === 'feed'
          ? html`<${ChangeFeed} />`
          : html`<${BrandLookup} />`;
  return html`<div class="registry">
    <nav aria-label="Registry" class="subnav">
      ${SECTIONS.map(([id, label]) => html`<a href=${`#/registry/${id}`} aria-current=${section === id || (id === 'brands' && !SECTIONS.some(([s]) => s === section)) ? 'page' : undefined}>${label}</a>`)}
    </nav>
    ${page}
  </div>`;
}

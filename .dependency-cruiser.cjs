// The gateway's layers, enforced by dependency-cruiser (issue 34, item 3).
//
// Layers, lowest first. A file may import its own layer and lower ones, never a higher one:
//   1. base         src/shared/**, src/logger.ts, src/config.ts, src/signing/**, src/wire/**
//   2. domain       src/domain/**
//   3. ports        src/{eventstore,readmodel,bus,adserver}/port.ts, src/projections/projection.ts
//   4. read-models  projections/** (the projections and their query functions)
//   5. application  src/application/**, src/public-events/** (the public event contract and its mapping)
//   6. adapters     src/{eventstore,readmodel,bus,adserver,projections,webhooks,oauth,limits,caches}/** (less the
//                   ports above), consumers/**
//   7. bindings     src/http/**, src/graphql/**, src/services.ts
//   8. composition  src/app.ts, src/main.ts, src/cli.ts, src/pipeline-metrics.ts, src/conformance/** (the conformance command), bin/**
// Extra rules: bindings reach data through the application (never projections/, src/eventstore/,
// src/readmodel/, ports included); nothing under src/application, src/domain, projections/ or
// consumers/ imports src/app.ts; and no circular dependency at all, type-only imports included
// (tsPreCompilationDeps below makes `import type` count).
//
// test/, web/ (the browser console, its own tsconfig), scripts/ and dist/ are outside the rules.
//
// There is no baseline of tolerated violations: any one fails `npm run deps:check` and
// test/unit/architecture.test.ts (in `npm test`). `npm run deps:graph` draws
// the layers into docs/architecture/. See docs/architecture/README.md.

/** Every module of the gateway's own tree (what a layer rule may point at). */
const OWN = '^(src|projections|consumers|bin)/';

const PORTS = [
  '^src/(eventstore|readmodel|bus|adserver)/port\\.ts$',
  '^src/projections/projection\\.ts$',
];

/** Lowest first; `path` and `pathNot` are regular expressions on paths relative to the repo root. */
const LAYERS = [
  { name: 'base', path: ['^src/(shared|signing|wire)/', '^src/(logger|config)\\.ts$'] },
  { name: 'domain', path: ['^src/domain/'] },
  { name: 'ports', path: PORTS },
  { name: 'read-models', path: ['^projections/'] },
  { name: 'application', path: ['^src/application/', '^src/public-events/'] },
  {
    name: 'adapters',
    path: ['^src/(eventstore|readmodel|bus|adserver|projections|webhooks|oauth|limits|caches)/', '^consumers/'],
    pathNot: PORTS,
  },
  // src/services.ts: the App interface, what the composition root hands the bindings.
  { name: 'bindings', path: ['^src/(http|graphql)/', '^src/services\\.ts$'] },
  { name: 'composition', path: ['^src/(app|main|cli|pipeline-metrics)\\.ts$', '^src/conformance/', '^bin/'] },
];

// A layer is "its own paths minus its pathNot"; "this layer or lower" is the union of those. Ports
// are the only carve-out (from folders otherwise in adapters), and ports sit below adapters, so the
// union of the lower layers' `path`s is exact for every layer.
function ownAndLower(i) {
  return LAYERS.slice(0, i + 1).flatMap((l) => l.path);
}

/** One rule per layer: from that layer to any module of ours that is not in it or below it. */
const upwardRules = LAYERS.slice(0, -1).map((layer, i) => ({
  name: layer.name === 'domain' ? 'domain-imports-only-base-and-domain' : `no-upward-from-${layer.name}`,
  severity: 'error',
  comment:
    `A module of the '${layer.name}' layer imports a module of a higher layer (or of no layer). ` +
    `Layers, lowest first: ${LAYERS.map((l) => l.name).join(' < ')}. ` +
    'Depend on a port (an interface handed in) or move the code down; see docs/architecture/README.md.',
  from: { path: layer.path, ...(layer.pathNot ? { pathNot: layer.pathNot } : {}) },
  to: { path: OWN, pathNot: ownAndLower(i) },
}));

// The layer graph: ports stay their own nodes; every other module folds into its top folder.
const GRAPH_COLLAPSE =
  '^(src/(eventstore|readmodel|bus|adserver)/port[.]ts|src/projections/projection[.]ts|src/[^/]+|projections|consumers|bin)';
const LAYER_COLOURS = {
  base: '#e0e0e0',
  domain: '#ffe9a8',
  ports: '#ffffff',
  'read-models': '#c8e6c9',
  application: '#bbdefb',
  adapters: '#d1c4e9',
  bindings: '#ffccbc',
  composition: '#f8bbd0',
};
const GRAPH_THEME = {
  graph: { rankdir: 'TB', splines: 'true', ranksep: '0.6' },
  // Collapsed folders have no trailing slash ("src/domain"), so a layer's folder pattern ends in (/|$).
  // The first matching entry wins, so the ports (listed before the adapters) keep their colour.
  modules: LAYERS.map((l) => ({
    criteria: { source: l.path.map((re) => re.replace(/\/$/, '(/|$)')) },
    attributes: { fillcolor: LAYER_COLOURS[l.name], tooltip: l.name },
  })),
};

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment:
        'This module is part of an import cycle (type-only imports count). Move the shared types or ' +
        'code into a module both sides import.',
      from: { path: OWN },
      to: { circular: true },
    },
    ...upwardRules,
    {
      name: 'bindings-not-to-data',
      severity: 'error',
      comment:
        'The HTTP/GraphQL bindings reach data through the application, never through the read ' +
        'models (projections/), the event store or the read-model store, their ports included.',
      from: { path: '^src/(http|graphql)/' },
      to: { path: ['^projections/', '^src/eventstore/', '^src/readmodel/'] },
    },
    {
      name: 'no-import-of-app',
      severity: 'error',
      comment:
        'src/app.ts composes the gateway; the application, the domain, the read models and the ' +
        'consumers are handed what they need (ports) instead of reaching for it.',
      from: { path: ['^src/application/', '^src/public-events/', '^src/domain/', '^projections/', '^consumers/'] },
      to: { path: '^src/app\\.ts$' },
    },
    {
      name: 'module-in-no-layer',
      severity: 'error',
      comment:
        'This module of ours belongs to no layer: add its folder to LAYERS in .dependency-cruiser.cjs ' +
        '(and to docs/architecture/README.md).',
      from: { path: OWN, pathNot: LAYERS.flatMap((l) => l.path) },
      to: {},
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      comment: "This module imports a module that can't be resolved to a file.",
      from: { path: OWN },
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Outside the rules: tests, the browser console (own tsconfig), scripts, build output.
    exclude: { path: '^(test|web|scripts|dist|node_modules)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.d.ts', '.js', '.cjs', '.mjs', '.json'],
      mainFields: ['main', 'types', 'typings'],
    },
    skipAnalysisNotInRules: true,
    reporterOptions: {
      // `npm run deps:graph` (docs/architecture/): one node per folder of src/ (its ports apart),
      // one for projections/ and one for consumers/, filled by layer; red edges break a rule.
      dot: { collapsePattern: GRAPH_COLLAPSE, theme: GRAPH_THEME },
      archi: { collapsePattern: GRAPH_COLLAPSE, theme: GRAPH_THEME },
      mermaid: { minify: false },
    },
  },
};

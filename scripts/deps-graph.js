#!/usr/bin/env node
// `npm run deps:graph`: the layer graph of .dependency-cruiser.cjs into docs/architecture/:
// layers.dot (dependency-cruiser's dot output, folded to folders as the rule file's
// reporterOptions say), layers.svg (Graphviz's `dot`; Debian: apt-get install graphviz) and
// layers.mmd (Mermaid, same folding). A developer step: the generated files are committed.
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const out = path.join(root, 'docs', 'architecture');
const bin = path.join(root, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');
const GRAPH_COLLAPSE = require(path.join(root, '.dependency-cruiser.cjs')).options.reporterOptions.dot.collapsePattern;

function depcruise(outputType, extra = []) {
  const args = [bin, '--config', '.dependency-cruiser.cjs', '--include-only', '^(src|projections|consumers)/', '--output-type', outputType, ...extra, 'src', 'projections', 'consumers'];
  const run = spawnSync(process.execPath, args, { cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (run.error) throw run.error;
  // depcruise exits with the number of rule violations (the known ones included); the graph shows them in red.
  if (!run.stdout) {
    process.stderr.write(run.stderr);
    process.exit(1);
  }
  return run.stdout;
}

fs.mkdirSync(out, { recursive: true });
const dotSource = depcruise('dot');
fs.writeFileSync(path.join(out, 'layers.dot'), dotSource);
fs.writeFileSync(path.join(out, 'layers.mmd'), depcruise('mermaid', ['--collapse', GRAPH_COLLAPSE]));
console.log('wrote docs/architecture/layers.dot and layers.mmd');

const svg = spawnSync('dot', ['-Tsvg'], { input: dotSource, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
if (svg.error || svg.status !== 0) {
  console.error(`deps:graph: Graphviz's dot is needed for layers.svg (apt-get install graphviz): ${svg.error?.message ?? svg.stderr}`);
  process.exit(1);
}
fs.writeFileSync(path.join(out, 'layers.svg'), svg.stdout);
console.log('wrote docs/architecture/layers.svg');

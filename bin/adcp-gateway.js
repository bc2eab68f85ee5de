#!/usr/bin/env node
'use strict';
// The compiled CLI (npm install builds dist/ through the `prepare` script).
const { main } = require('../dist/src/cli.js');
main(process.argv.slice(2)).then((code) => {
  if (code >= 0) process.exit(code);
});

'use strict';

// The declarations compile, and the types refuse what the schemas refuse where TypeScript can tell.

const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const { test } = require('node:test');

test('index.d.ts and types.d.ts type-check a usage file with tsc --strict', () => {
  const tsc = require.resolve('typescript/bin/tsc');
  const project = path.join(__dirname, 'types', 'tsconfig.json');
  const run = spawnSync(process.execPath, [tsc, '--project', project], { encoding: 'utf8' });
  assert.equal(run.error, undefined, String(run.error));
  assert.equal(run.status, 0, `tsc failed:\n${run.stdout}${run.stderr}`);
});

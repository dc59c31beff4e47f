'use strict';

// Every case of the repository's CONFORMANCE/1.0 and EXAMPLES/1.0 gets the verdict of its folder.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { describe, test } = require('node:test');
const { validateMessage } = require('..');

const repo = path.join(__dirname, '..', '..', '..', '..');

function messageFiles(dir) {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        return messageFiles(file);
      }
      return entry.name.endsWith('.json') && entry.name !== 'index.json' ? [file] : [];
    })
    .sort();
}

/** The method each indexed response answers, by absolute path. */
function readIndex(indexFile) {
  const index = JSON.parse(fs.readFileSync(indexFile, 'utf8'));
  const methods = new Map();
  for (const [relative, method] of Object.entries(index)) {
    const file = path.join(path.dirname(indexFile), relative);
    assert.ok(fs.existsSync(file), `${indexFile} names ${relative}, which does not exist`);
    methods.set(file, method);
  }
  return methods;
}

function verdict(file, methods) {
  let message;
  try {
    message = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (error) {
    return { valid: false, errors: [{ message: `not JSON: ${error.message}` }] };
  }
  return validateMessage(message, methods.get(file));
}

const corpora = [
  { name: 'CONFORMANCE/1.0/valid', root: 'CONFORMANCE/1.0', dir: 'valid', valid: true },
  { name: 'CONFORMANCE/1.0/invalid', root: 'CONFORMANCE/1.0', dir: 'invalid', valid: false },
  { name: 'EXAMPLES/1.0', root: 'EXAMPLES/1.0', dir: '.', valid: true },
];

for (const corpus of corpora) {
  const root = path.join(repo, corpus.root);
  const files = messageFiles(path.join(root, corpus.dir));
  const methods = readIndex(path.join(root, 'index.json'));

  describe(`${corpus.name} (${files.length} cases, all ${corpus.valid ? 'valid' : 'invalid'})`, () => {
    test('has cases', () => {
      assert.ok(files.length > 0, `no message files under ${path.join(root, corpus.dir)}`);
    });
    for (const file of files) {
      test(path.relative(root, file), () => {
        const result = verdict(file, methods);
        const reason = JSON.stringify(result.errors[0]);
        assert.equal(result.valid, corpus.valid, corpus.valid ? `rejected: ${reason}` : 'accepted');
      });
    }
  });
}

test('every indexed response is checked against its method schema', () => {
  const methods = readIndex(path.join(repo, 'CONFORMANCE/1.0/index.json'));
  for (const [file, method] of methods) {
    const message = JSON.parse(fs.readFileSync(file, 'utf8'));
    const { checked, valid } = validateMessage(message, method);
    if (valid) {
      assert.equal(checked.length, 2, `${file}: only ${checked} applied`);
    }
  }
});

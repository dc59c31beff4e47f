'use strict';

const assert = require('node:assert/strict');
const { describe, test } = require('node:test');
const gabp = require('..');
const catalog = require('../catalog.json');

const {
  schemas,
  protocolVersion,
  schemaVersion,
  standardMethods,
  validateMessage,
  validateRequest,
  validateResponse,
  validateEvent,
  getValidator,
} = gabp;

const ID = '550e8400-e29b-41d4-a716-446655440000';
const request = (method, params) => ({ v: 'gabp/1', id: ID, type: 'request', method, ...(params && { params }) });
const success = (result) => ({ v: 'gabp/1', id: ID, type: 'response', result });
const failure = { v: 'gabp/1', id: ID, type: 'response', error: { code: -32601, message: 'Method not found' } };
const event = (channel, payload) => ({ v: 'gabp/1', id: ID, type: 'event', channel, seq: 0, payload });
const attention = {
  attentionId: 'att-1',
  state: 'open',
  severity: 'error',
  blocking: true,
  stateInvalidated: false,
  summary: 'Chunk failed to save.',
  openedAtSequence: 1,
  latestSequence: 2,
  totalUrgentEntries: 1,
};
const notObjects = [null, undefined, 42, 'gabp/1', true, [], [request('tools/list')]];

describe('schemas', () => {
  test('are keyed by their path under schemas/, one per catalog entry', () => {
    assert.deepEqual(Object.keys(schemas).sort(), [...catalog.schemas].sort());
    assert.ok('envelope.schema.json' in schemas);
    assert.ok('methods/tools.call.request.json' in schemas);
  });

  test('are draft 2020-12 schemas with the $id of their path', () => {
    for (const [name, schema] of Object.entries(schemas)) {
      assert.equal(schema.$schema, 'https://json-schema.org/draft/2020-12/schema', name);
      assert.equal(schema.$id, `https://gabp-rs.dev/schema/1.0/${name}`, name);
      assert.ok(!JSON.stringify(schema).includes('"definitions"'), `${name} still has definitions`);
    }
  });

  test('cannot be changed behind the validators', () => {
    assert.ok(Object.isFrozen(schemas));
    assert.ok(Object.isFrozen(schemas['envelope.schema.json'].$defs.request));
    assert.throws(() => {
      schemas['envelope.schema.json'].$defs.request.additionalProperties = true;
    }, TypeError);
  });

  test('versions and standard methods come from the catalog', () => {
    assert.equal(protocolVersion, 'gabp/1');
    assert.match(schemaVersion, /^1\.\d+$/);
    assert.deepEqual([...standardMethods], Object.keys(catalog.methods));
    assert.ok(standardMethods.includes('session/hello'));
    assert.ok(standardMethods.includes('tools/cancel'));
  });
});

describe('validateMessage', () => {
  test('accepts a standard request and applies its method schema', () => {
    assert.deepEqual(validateMessage(request('tools/list')), {
      valid: true,
      errors: [],
      checked: ['envelope.schema.json', 'methods/tools.list.request.json'],
    });
  });

  test("rejects a standard request whose params break the method's schema", () => {
    const result = validateMessage(request('tools/call', { arguments: {} }));
    assert.equal(result.valid, false);
    assert.equal(result.errors[0].schemaName, 'methods/tools.call.request.json');
    assert.equal(result.errors[0].instancePath, '/params');
    assert.equal(result.errors[0].params.missingProperty, 'name');
  });

  test('rejects a request that breaks the envelope, naming the envelope', () => {
    const result = validateMessage({ ...request('tools/list'), id: 'not-a-uuid' });
    assert.equal(result.valid, false);
    assert.deepEqual(result.checked, ['envelope.schema.json']);
    assert.ok(result.errors.every((e) => e.schemaName === 'envelope.schema.json'));
  });

  test('checks a request of a method that is not standard against the envelope only', () => {
    const result = validateMessage(request('world/place_block', { anything: [1, 2] }));
    assert.deepEqual(result, { valid: true, errors: [], checked: ['envelope.schema.json'] });
  });

  test("applies the response schema of the request's method", () => {
    const good = validateMessage(success({ subscribed: ['player/move'] }), 'events/subscribe');
    assert.deepEqual(good.checked, ['envelope.schema.json', 'methods/events.subscribe.response.json']);
    assert.equal(good.valid, true);
    const bad = validateMessage(success({ subscribed: 'player/move' }), 'events/subscribe');
    assert.equal(bad.valid, false);
    assert.equal(bad.errors[0].instancePath, '/result/subscribed');
    assert.equal(
      validateMessage(success({ agentId: 'mod' }), 'session/hello').errors[0].schemaName,
      'methods/session.welcome.response.json',
    );
  });

  test('accepts an error response for every standard method', () => {
    for (const method of standardMethods) {
      assert.equal(validateMessage(failure, method).valid, true, method);
    }
  });

  test('checks a response without a known method against the envelope only', () => {
    for (const method of [undefined, 'world/place_block', 'constructor', '__proto__', 'toString']) {
      const result = validateMessage(success({ anything: true }), method);
      assert.deepEqual(result, { valid: true, errors: [], checked: ['envelope.schema.json'] }, String(method));
    }
  });

  test('ignores inherited names where a method or channel is looked up', () => {
    for (const name of ['constructor', '__proto__', 'hasOwnProperty']) {
      assert.deepEqual(validateMessage({ ...request('tools/list'), method: name }).checked, ['envelope.schema.json']);
      assert.deepEqual(validateMessage(event(name, {})).checked, ['envelope.schema.json']);
    }
  });

  test("checks an event's payload against its channel's schema", () => {
    const opened = validateMessage(event('attention/opened', attention));
    assert.deepEqual(opened.checked, ['envelope.schema.json', 'events/attention.payload.schema.json']);
    assert.equal(opened.valid, true);
    const progress = validateMessage(event('tools/progress', { progressToken: 't', progress: 1 }));
    assert.deepEqual(progress.checked, ['envelope.schema.json', 'events/tools-progress.payload.schema.json']);
    assert.equal(progress.valid, true);
    const game = validateMessage(event('player/move', [1, 2, 3]));
    assert.deepEqual(game, { valid: true, errors: [], checked: ['envelope.schema.json'] });
  });

  test('rejects a bad payload with a pointer into the message', () => {
    const result = validateMessage(event('tools/changed', { added: ['a/b'], removed: 'a/c' }));
    assert.equal(result.valid, false);
    assert.ok(result.errors.some((e) => e.instancePath.startsWith('/payload')), JSON.stringify(result.errors));
  });

  test('rejects what is not a message object, without throwing', () => {
    for (const value of notObjects) {
      const result = validateMessage(value);
      assert.equal(result.valid, false, JSON.stringify(value));
      assert.ok(result.errors.length > 0);
      assert.deepEqual(result.checked, ['envelope.schema.json']);
    }
  });

  test('throws a TypeError when the method argument is not a string', () => {
    for (const method of [null, 42, {}, ['tools/list']]) {
      assert.throws(() => validateMessage(success({}), method), { name: 'TypeError', message: /method must be a string/ });
    }
  });
});

describe('validateRequest', () => {
  test('accepts a request', () => {
    assert.equal(validateRequest(request('session/ping')).valid, true);
    assert.equal(validateRequest(request('world/anything', { x: 1 })).valid, true);
  });

  test('rejects a request with bad params', () => {
    const result = validateRequest(request('attention/ack', {}));
    assert.equal(result.valid, false);
    assert.equal(result.errors[0].schemaName, 'methods/attention.ack.request.json');
  });

  test('rejects other messages and non-objects with a clear error', () => {
    for (const value of [failure, event('player/move', {}), ...notObjects]) {
      const result = validateRequest(value);
      assert.equal(result.valid, false, JSON.stringify(value));
      assert.equal(result.errors[0].keyword, 'messageType');
      assert.match(result.errors[0].message, /must be a request message/);
      assert.deepEqual(result.checked, []);
    }
  });
});

describe('validateResponse', () => {
  test("applies the method's result schema", () => {
    assert.equal(validateResponse(success({ cancelled: true }), 'tools/cancel').valid, true);
    const result = validateResponse(success({ cancelled: 'yes' }), 'tools/cancel');
    assert.equal(result.valid, false);
    assert.equal(result.errors[0].schemaName, 'methods/tools.cancel.response.json');
  });

  test('checks the envelope only for an unknown or missing method', () => {
    assert.deepEqual(validateResponse(success(42), 'game/custom').checked, ['envelope.schema.json']);
    assert.deepEqual(validateResponse(success(42)).checked, ['envelope.schema.json']);
    assert.equal(validateResponse({ ...success(1), error: failure.error }, 'game/custom').valid, false);
  });

  test('rejects other messages and non-objects with a clear error', () => {
    for (const value of [request('tools/list'), event('player/move', {}), ...notObjects]) {
      const result = validateResponse(value, 'tools/list');
      assert.equal(result.valid, false, JSON.stringify(value));
      assert.match(result.errors[0].message, /must be a response message/);
    }
  });

  test('throws a TypeError when the method is not a string', () => {
    assert.throws(() => validateResponse(failure, 7), TypeError);
  });
});

describe('validateEvent', () => {
  test('accepts events and checks payloads', () => {
    assert.equal(validateEvent(event('attention/cleared', { ...attention, state: 'cleared' })).valid, true);
    const result = validateEvent(event('attention/updated', { ...attention, severity: 'dire' }));
    assert.equal(result.valid, false);
  });

  test('rejects an event without a payload', () => {
    const bare = event('player/move', {});
    delete bare.payload;
    assert.equal(validateEvent(bare).valid, false);
  });

  test('rejects other messages and non-objects with a clear error', () => {
    for (const value of [request('tools/list'), failure, ...notObjects]) {
      const result = validateEvent(value);
      assert.equal(result.valid, false, JSON.stringify(value));
      assert.match(result.errors[0].message, /must be an event message/);
    }
  });
});

describe('getValidator', () => {
  test('gives a validator for every schema', () => {
    for (const name of Object.keys(schemas)) {
      const validate = getValidator(name);
      assert.equal(typeof validate, 'function', name);
      const result = validate(Symbol.for('not JSON'));
      assert.equal(result.valid, false, name);
      assert.deepEqual(result.checked, [name]);
    }
  });

  test('validates data against one schema', () => {
    const validate = getValidator('common/error.schema.json');
    assert.deepEqual(validate({ code: -32000, message: 'boom' }), {
      valid: true,
      errors: [],
      checked: ['common/error.schema.json'],
    });
    const result = validate({ code: 1.5, message: '' });
    assert.equal(result.valid, false);
    assert.equal(result.errors[0].schemaName, 'common/error.schema.json');
  });

  test('throws an Error naming an unknown schema', () => {
    for (const name of ['nope.json', 'envelope', 'toString', '__proto__', undefined, 42]) {
      assert.throws(() => getValidator(name), { name: 'Error', message: /gabp-schemas: unknown schema/ }, String(name));
    }
  });
});

describe('modules', () => {
  test('import gives the same functions as require', async () => {
    const esm = await import('gabp-schemas');
    assert.equal(esm.validateMessage, validateMessage);
    assert.equal(esm.getValidator, getValidator);
    assert.equal(esm.schemas, schemas);
    assert.equal(esm.default, gabp);
    assert.equal(require('gabp-schemas'), gabp);
  });

  test('the schemas are importable by path', () => {
    assert.deepEqual(require('gabp-schemas/schemas/envelope.schema.json'), schemas['envelope.schema.json']);
  });
});

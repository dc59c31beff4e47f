'use strict';

const Ajv2020 = require('ajv/dist/2020').default;
const addFormats = require('ajv-formats').default;
const catalog = require('./catalog.json');

const ENVELOPE = 'envelope.schema.json';

function deepFreeze(value) {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.values(value).forEach(deepFreeze);
    Object.freeze(value);
  }
  return value;
}

const schemas = Object.freeze(
  Object.fromEntries(catalog.schemas.map((name) => [name, deepFreeze(require(`./schemas/${name}`))])),
);

const ajv = new Ajv2020();
addFormats(ajv, ['uuid', 'uri', 'date-time']);
for (const schema of Object.values(schemas)) {
  ajv.addSchema(schema);
}

const has = (object, key) => typeof key === 'string' && Object.prototype.hasOwnProperty.call(object, key);
const isObject = (value) => value !== null && typeof value === 'object' && !Array.isArray(value);

const compiled = new Map();

function compile(schemaName) {
  let validate = compiled.get(schemaName);
  if (validate === undefined) {
    validate = ajv.getSchema(schemas[schemaName].$id);
    compiled.set(schemaName, validate);
  }
  return validate;
}

function run(schemaName, data, pointer) {
  const validate = compile(schemaName);
  if (validate(data)) {
    return [];
  }
  return validate.errors.map((error) => ({ ...error, instancePath: pointer + error.instancePath, schemaName }));
}

function checkMethodArgument(method, caller) {
  if (method !== undefined && typeof method !== 'string') {
    throw new TypeError(`gabp-schemas: ${caller}: method must be a string or undefined, got ${typeof method}`);
  }
}

/** The schemas that apply to a message, as [schema name, JSON pointer of the part it checks]. */
function applicableSchemas(message, method) {
  const list = [[ENVELOPE, '']];
  if (!isObject(message)) {
    return list;
  }
  if (message.type === 'request' && has(catalog.methods, message.method)) {
    list.push([catalog.methods[message.method].request, '']);
  } else if (message.type === 'response' && has(catalog.methods, method)) {
    list.push([catalog.methods[method].response, '']);
  } else if (message.type === 'event' && typeof message.channel === 'string' && has(message, 'payload')) {
    const prefix = Object.keys(catalog.channelPrefixes).find((p) => message.channel.startsWith(p));
    const payload = has(catalog.channels, message.channel)
      ? catalog.channels[message.channel]
      : prefix && catalog.channelPrefixes[prefix];
    if (payload) {
      list.push([payload, '/payload']);
    }
  }
  return list;
}

function validateMessage(message, method) {
  checkMethodArgument(method, 'validateMessage');
  const checked = [];
  for (const [schemaName, pointer] of applicableSchemas(message, method)) {
    checked.push(schemaName);
    const data = pointer === '' ? message : message.payload;
    const errors = run(schemaName, data, pointer);
    if (errors.length > 0) {
      return { valid: false, errors, checked };
    }
  }
  return { valid: true, errors: [], checked };
}

function ofType(message, type) {
  if (isObject(message) && message.type === type) {
    return null;
  }
  const error = {
    instancePath: isObject(message) ? '/type' : '',
    schemaPath: '',
    keyword: 'messageType',
    params: { type },
    message: `must be ${type === 'event' ? 'an' : 'a'} ${type} message (an object with "type": "${type}")`,
  };
  return { valid: false, errors: [error], checked: [] };
}

function validateRequest(message) {
  return ofType(message, 'request') || validateMessage(message);
}

function validateResponse(message, method) {
  checkMethodArgument(method, 'validateResponse');
  return ofType(message, 'response') || validateMessage(message, method);
}

function validateEvent(message) {
  return ofType(message, 'event') || validateMessage(message);
}

function getValidator(schemaName) {
  if (!has(schemas, schemaName)) {
    throw new Error(
      `gabp-schemas: unknown schema ${JSON.stringify(schemaName)}; ` +
        'the names are the keys of schemas, such as "envelope.schema.json" or "methods/tools.call.request.json"',
    );
  }
  return (data) => {
    const errors = run(schemaName, data, '');
    return { valid: errors.length === 0, errors, checked: [schemaName] };
  };
}

module.exports = {
  schemas,
  protocolVersion: catalog.protocolVersion,
  schemaVersion: catalog.schemaVersion,
  standardMethods: Object.freeze(Object.keys(catalog.methods)),
  validateMessage,
  validateRequest,
  validateResponse,
  validateEvent,
  getValidator,
};

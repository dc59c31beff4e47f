// Type-checked by test/types.test.js; every @ts-expect-error line must be an error.
import gabp, {
  getValidator,
  schemas,
  standardMethods,
  validateMessage,
  validateResponse,
  type Attention,
  type ErrorObject,
  type Event,
  type Message,
  type Request,
  type Response,
  type SessionHelloResult,
  type StandardMethod,
  type ValidationResult,
} from 'gabp-schemas';

const id = '550e8400-e29b-41d4-a716-446655440000';

const hello: Request<'session/hello'> = {
  v: 'gabp/1',
  id,
  type: 'request',
  method: 'session/hello',
  params: { token: 't', bridgeVersion: '1.0.0', platform: 'linux', launchId: id },
};
// @ts-expect-error session/hello needs params
const helloWithoutParams: Request<'session/hello'> = { v: 'gabp/1', id, type: 'request', method: 'session/hello' };
// @ts-expect-error platform is one of windows, macos, linux
const helloOnBeOS: Request<'session/hello'> = { ...hello, params: { ...hello.params, platform: 'beos' } };
const ping: Request<'session/ping'> = { v: 'gabp/1', id, type: 'request', method: 'session/ping' };
const custom: Request = { v: 'gabp/1', id, type: 'request', method: 'world/place_block', params: { x: 1 } };
// @ts-expect-error the wire version is gabp/1
const wrongVersion: Request = { ...custom, v: 'gabp/2' };

const welcome: Response<'session/hello'> = {
  v: 'gabp/1',
  id,
  type: 'response',
  result: { agentId: 'mod', app: { name: 'Game', version: '1' }, capabilities: {}, schemaVersion: '1.1' },
};
const error: ErrorObject = { code: -32601, message: 'Method not found' };
const failed: Response<'tools/call'> = { v: 'gabp/1', id, type: 'response', error };
// @ts-expect-error a response has a result or an error, not both
const both: Response<'tools/call'> = { v: 'gabp/1', id, type: 'response', result: 1, error };
// @ts-expect-error subscribed is a list of channels
const badResult: Response<'events/subscribe'> = { v: 'gabp/1', id, type: 'response', result: { subscribed: 'a/b' } };

const opened: Event<'attention/opened'> = {
  v: 'gabp/1',
  id,
  type: 'event',
  channel: 'attention/opened',
  seq: 0,
  payload: {
    attentionId: 'a',
    state: 'open',
    severity: 'error',
    blocking: true,
    stateInvalidated: false,
    summary: 's',
    openedAtSequence: 0,
    latestSequence: 0,
    totalUrgentEntries: 1,
  },
};
const payload: Attention = opened.payload;
// @ts-expect-error tools/changed payloads list added and removed tools
const changed: Event<'tools/changed'> = { v: 'gabp/1', id, type: 'event', channel: 'tools/changed', seq: 1, payload: {} };
const game: Event = { v: 'gabp/1', id, type: 'event', channel: 'player/move', seq: 2, payload: [1, 2] };

const messages: Message[] = [hello, ping, custom, welcome, failed, opened, game];
const results: ValidationResult[] = messages.map((m) => validateMessage(m));
results.push(validateResponse(welcome, 'session/hello'), getValidator('envelope.schema.json')(hello));
const agent: SessionHelloResult['agentId'] = 'mod';
const method: StandardMethod = standardMethods[0];
// @ts-expect-error world/place_block is not a standard method
const notStandard: StandardMethod = 'world/place_block';
const envelope = schemas['envelope.schema.json'];
// @ts-expect-error validators return a result, not a boolean
const flag: boolean = validateMessage(hello);
// @ts-expect-error the method is a string
validateResponse(welcome, 42);

export const used = [gabp, helloWithoutParams, helloOnBeOS, wrongVersion, both, badResult, payload, changed];
export const more = [results, agent, method, notStandard, envelope, flag];

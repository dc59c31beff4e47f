import type { ErrorObject as AjvErrorObject } from 'ajv';
import type { ChannelPrefixes, Channels, ErrorObject, Methods } from './types';

export * from './types';

/** The wire version every message carries in `v`. */
export type ProtocolVersion = 'gabp/1';

/** A standard method: one with request and response schemas of its own. */
export type StandardMethod = keyof Methods;

/** The params of a method's requests: its own type for a standard method, any object otherwise. */
export type ParamsOf<M extends string> = M extends StandardMethod ? Methods[M]['params'] : Record<string, unknown>;

/** The result of a method's successful responses: its own type for a standard method, any JSON value otherwise. */
export type ResultOf<M extends string> = M extends StandardMethod ? Methods[M]['result'] : unknown;

/** The payload of a channel's events: its own type where the channel has a schema, any JSON value otherwise. */
export type PayloadOf<C extends string> = C extends keyof Channels
  ? Channels[C]
  : C extends `attention/${string}`
    ? ChannelPrefixes['attention/']
    : unknown;

interface RequestBase<M extends string> {
  v: ProtocolVersion;
  /** A UUID, unique per request. */
  id: string;
  type: 'request';
  method: M;
}

/** A request; `params` is required for the standard methods that need it. */
export type Request<M extends string = string> = M extends StandardMethod
  ? Methods[M]['paramsRequired'] extends true
    ? RequestBase<M> & { params: ParamsOf<M> }
    : RequestBase<M> & { params?: ParamsOf<M> }
  : RequestBase<M> & { params?: Record<string, unknown> };

interface ResponseBase {
  v: ProtocolVersion;
  /** The `id` of the request this response answers. */
  id: string;
  type: 'response';
}

/** A successful response to a request of method `M`. */
export interface SuccessResponse<M extends string = string> extends ResponseBase {
  result: ResultOf<M>;
  error?: never;
}

/** A failed response. */
export interface ErrorResponse extends ResponseBase {
  error: ErrorObject;
  result?: never;
}

/** A response to a request of method `M`: exactly one of `result` and `error`. */
export type Response<M extends string = string> = SuccessResponse<M> | ErrorResponse;

/** An event on channel `C`. */
export interface Event<C extends string = string> {
  v: ProtocolVersion;
  /** A UUID, unique per event. */
  id: string;
  type: 'event';
  channel: C;
  /** Sequence number, per channel, from 0. */
  seq: number;
  payload: PayloadOf<C>;
  /** When the event occurred (RFC 3339). */
  timestamp?: string;
}

/** Any gabp/1 message. */
export type Message = Request | Response | Event;

/** An ajv error, with the name of the schema that reported it (a key of `schemas`). */
export interface ValidationError extends AjvErrorObject {
  schemaName?: string;
}

/** What every validator returns. */
export interface ValidationResult {
  valid: boolean;
  /** Empty when valid; otherwise the errors of the first schema that rejected the message. */
  errors: ValidationError[];
  /** The schemas that were applied, in order, up to the first that rejected the message. */
  checked: string[];
}

/** A JSON Schema document. */
export type JsonSchema = Readonly<Record<string, unknown>>;

/** Every schema (draft 2020-12), keyed by its path under `schemas/`, such as `methods/tools.call.request.json`. */
export const schemas: Readonly<Record<string, JsonSchema>>;

/** The wire version, `gabp/1`. */
export const protocolVersion: ProtocolVersion;

/** The schema line the schemas describe, such as `1.1`. */
export const schemaVersion: string;

/** The standard methods, in alphabetical order. */
export const standardMethods: readonly StandardMethod[];

/**
 * Validates any message against the envelope, then against the schema of its kind where there is one: a
 * standard method's request schema, the response schema of `method` (the method of the request a response
 * answers), or an event channel's payload schema. Never throws for any `message`.
 *
 * @throws TypeError when `method` is neither a string nor undefined.
 */
export function validateMessage(message: unknown, method?: string): ValidationResult;

/** Like `validateMessage`, and invalid unless `message` is a request. Never throws. */
export function validateRequest(message: unknown): ValidationResult;

/**
 * Like `validateMessage(message, method)`, and invalid unless `message` is a response. An unknown or
 * missing `method` checks the envelope only (see `checked`).
 *
 * @throws TypeError when `method` is neither a string nor undefined.
 */
export function validateResponse(message: unknown, method?: string): ValidationResult;

/** Like `validateMessage`, and invalid unless `message` is an event. Never throws. */
export function validateEvent(message: unknown): ValidationResult;

/**
 * The validator of one schema, by its key in `schemas`.
 *
 * @throws Error when `schemaName` is not a key of `schemas`.
 */
export function getValidator(schemaName: string): (data: unknown) => ValidationResult;

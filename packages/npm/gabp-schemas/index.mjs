import gabp from './index.js';

export const {
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

export default gabp;

// Type-checked by test/types.test.js: the declarations as a CommonJS consumer sees them.
import gabp = require('gabp-schemas');

const result: gabp.ValidationResult = gabp.validateRequest({ v: 'gabp/1' });
const names: string[] = Object.keys(gabp.schemas);
// @ts-expect-error getValidator takes a schema name
gabp.getValidator();

export = [result, names];

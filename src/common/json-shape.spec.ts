import { describe, expect, it } from 'vitest';
import { jsonShapeViolation } from './json-shape.js';

const limits = { maxDepth: 3, maxItems: 5 };
const nested = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;

describe('jsonShapeViolation', () => {
  it('accepts bodies within depth and entry bounds', () => {
    expect(jsonShapeViolation('{"a":{"b":[1,2]}}', limits)).toBeUndefined(); // depth 3, 4 entries
    expect(jsonShapeViolation(nested(3), limits)).toBeUndefined();
    expect(jsonShapeViolation('[1,2,3,4,5]', limits)).toBeUndefined();
    expect(jsonShapeViolation('"just a string"', limits)).toBeUndefined();
    expect(jsonShapeViolation('', limits)).toBeUndefined();
  });

  it('refuses nesting deeper than maxDepth', () => {
    expect(jsonShapeViolation(nested(4), limits)).toMatch(/deeper than 3 levels/);
    expect(jsonShapeViolation('{"a":{"b":{"c":{}}}}', limits)).toMatch(/deeper than 3/);
    expect(jsonShapeViolation(`{"name":${nested(100_000)}}`, limits)).toMatch(/deeper/);
  });

  it('counts members and elements at every level, empty containers as none', () => {
    expect(jsonShapeViolation('[1,2,3,4,5,6]', limits)).toMatch(/more than 5 members/);
    expect(jsonShapeViolation('{"a":[1,2],"b":{"c":1,"d":2}}', limits)).toMatch(/more than 5/); // 6
    expect(jsonShapeViolation('{"a":[],"b":{},"c":[[]],"d":1}', limits)).toBeUndefined(); // 5
    expect(jsonShapeViolation('[ [ ] , [ ] , [ 1 ] ]', limits)).toBeUndefined(); // 4
  });

  it('ignores brackets, commas and escaped quotes inside strings', () => {
    expect(jsonShapeViolation('{"a":"[[[[,,,,,,{{{{"}', limits)).toBeUndefined();
    expect(jsonShapeViolation('{"a":"x\\"[[[[,,,,,,"}', limits)).toBeUndefined();
    expect(jsonShapeViolation('{"a":"x\\\\","b":[[[[]]]]}', limits)).toMatch(/deeper/);
  });

  it('leaves malformed text to the JSON parser', () => {
    expect(jsonShapeViolation('{"a": "unterminated', limits)).toBeUndefined();
    expect(jsonShapeViolation(']]]]', limits)).toBeUndefined();
  });
});

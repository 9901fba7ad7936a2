import { describe, expect, it } from 'vitest';
import { forbiddenMember, jsonShapeViolation } from './json-shape.js';

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

describe('forbiddenMember', () => {
  it('names a __proto__ member and where it is', () => {
    expect(forbiddenMember('{"__proto__":{}}')).toEqual({
      field: '__proto__',
      message: 'member name "__proto__" is not allowed',
    });
    expect(forbiddenMember('{"a":[1,{"b":{"__proto__":1}}]}')?.field).toBe('a[1].b.__proto__');
    expect(forbiddenMember('[{"x-y":{"__proto__":null}}]')?.field).toBe('[0]["x-y"].__proto__');
  });

  it('names constructor.prototype, not a plain "constructor" member', () => {
    expect(forbiddenMember('{"constructor":{"prototype":{}}}')?.field).toBe(
      'constructor.prototype',
    );
    expect(forbiddenMember('{"constructor":{"name":"x"}}')).toBeUndefined();
    expect(forbiddenMember('{"constructor":"x"}')).toBeUndefined();
  });

  it('says nothing for text that is not JSON or has no such member', () => {
    expect(forbiddenMember('{"__proto__":')).toBeUndefined();
    expect(forbiddenMember('{"proto":{"__proto":1}}')).toBeUndefined();
  });
});

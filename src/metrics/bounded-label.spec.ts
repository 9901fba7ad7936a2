import { describe, expect, it } from 'vitest';
import { BoundedLabel } from './bounded-label.js';

describe('BoundedLabel', () => {
  it('keeps the first `max` distinct names and answers `other` for the rest', () => {
    const names = new BoundedLabel(2, 64);
    expect(names.label('A')).toBe('A');
    expect(names.label('B')).toBe('B');
    expect(names.label('C')).toBe('other');
    expect(names.label('A')).toBe('A'); // already kept
  });

  it('answers `other` for names too long or outside the GraphQL name charset', () => {
    const names = new BoundedLabel(10, 5);
    expect(names.label('Sixsix')).toBe('other');
    expect(names.label('a-b')).toBe('other');
    expect(names.label('1ab')).toBe('other');
    expect(names.label('_ok1')).toBe('_ok1');
  });
});

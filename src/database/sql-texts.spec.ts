import { describe, expect, it } from 'vitest';
import { SqlTexts } from './sql-texts.js';

describe('SqlTexts', () => {
  it('builds a shape once and answers the same string after', () => {
    const texts = new SqlTexts();
    let built = 0;
    const build = () => {
      built += 1;
      return ['SELECT 1', 'SELECT 2'].join(' UNION ALL ');
    };
    const first = texts.get('2', build);
    expect(texts.get('2', build)).toBe(first);
    expect(built).toBe(1);
    expect(texts.get('3', () => 'SELECT 3')).toBe('SELECT 3');
  });

  it('keeps at most `max` shapes, dropping the oldest', () => {
    const texts = new SqlTexts(2);
    let built = 0;
    const get = (shape: string) =>
      texts.get(shape, () => {
        built += 1;
        return `text ${shape}`;
      });
    get('a');
    get('b');
    get('c');
    expect(built).toBe(3);
    get('b');
    get('c');
    expect(built).toBe(3);
    get('a');
    expect(built).toBe(4);
  });
});

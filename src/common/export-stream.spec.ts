import { describe, expect, it } from 'vitest';
import { csvField } from './export-stream.js';

describe('csvField (CSV export cells)', () => {
  it.each([
    ['=1+2', "'=1+2"],
    ['+1', "'+1"],
    ['-5', "'-5"],
    ['@SUM(A1)', "'@SUM(A1)"],
    ['\tx', "'\tx"],
    ['\rx', `"'\rx"`],
    ['=A1,B1', `"'=A1,B1"`],
  ])("gives the text %j a leading ' (a spreadsheet would run it as a formula)", (value, cell) => {
    expect(csvField(value)).toBe(cell);
  });

  it('writes other text, numbers (negative ones too), booleans, null and JSON members as they are', () => {
    expect(csvField('a-5')).toBe('a-5');
    expect(csvField(' =x')).toBe(' =x');
    expect(csvField(-5)).toBe('-5');
    expect(csvField(true)).toBe('true');
    expect(csvField(null)).toBe('');
    expect(csvField([{ sku: '=X' }])).toBe('"[{""sku"":""=X""}]"');
  });
});

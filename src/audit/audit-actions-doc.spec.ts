import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { AUDIT_ACTIONS } from './audit-event.js';

/** The actions of docs/admin.md's "Audit log" table: the first column, one per row. */
function documentedActions(): string[] {
  const doc = readFileSync(new URL('../../docs/admin.md', import.meta.url), 'utf8');
  const section = doc.slice(doc.indexOf('## Audit log'));
  const table = section.slice(0, section.indexOf('\n\n', section.indexOf('| action')));
  return [...table.matchAll(/^\| `([a-z_]+\.[a-z_]+)`/gm)].map((m) => m[1] ?? '');
}

describe('audit actions in docs/admin.md', () => {
  it('the Audit log table lists every action the server writes, each once, and no other', () => {
    const documented = documentedActions();
    expect(new Set(documented).size).toBe(documented.length);
    expect([...documented].sort()).toEqual([...AUDIT_ACTIONS].sort());
  });
});

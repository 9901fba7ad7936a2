import { monotonicFactory } from 'ulid';

export const ID_PREFIXES = {
  user: 'usr',
  /** `Admin` (GraphQL): an administrator, the same ULID as its user's `usr_` id. */
  admin: 'adm',
  order: 'ord',
  post: 'pst',
  room: 'rom',
  message: 'msg',
  apiKey: 'key',
  refreshToken: 'rft',
  auditEvent: 'aud',
  webhookEndpoint: 'whk',
  webhookEvent: 'evt',
  webhookDelivery: 'dlv',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

const nextUlid = monotonicFactory();
const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;

/** A new prefixed, time-ordered id such as `usr_01J…` (docs/contract.md section 3). */
export function newId(kind: IdKind): string {
  return `${ID_PREFIXES[kind]}_${nextUlid()}`;
}

/** True when `id` is a well-formed id of this kind; anything else is simply "not found". */
export function isId(kind: IdKind, id: unknown): id is string {
  return (
    typeof id === 'string' &&
    id.length === 30 &&
    id.startsWith(`${ID_PREFIXES[kind]}_`) &&
    ULID.test(id.slice(4))
  );
}

/** The kind an id belongs to, by its prefix (node(id:) dispatch). */
export function kindOf(id: string): IdKind | undefined {
  const prefix = id.slice(0, 3);
  for (const [kind, p] of Object.entries(ID_PREFIXES)) {
    if (p === prefix && isId(kind as IdKind, id)) {
      return kind as IdKind;
    }
  }
  return undefined;
}

/** RFC 3339 UTC with milliseconds. */
export function nowIso(): string {
  return new Date().toISOString();
}

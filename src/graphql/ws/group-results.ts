import type { execute, ExecutionResult } from 'graphql';
import { MAX_EVENT_BYTES } from '../response-size.js';
import { jsonSize } from '../subscription-events.js';

/** A subscription event's result, executed once per group of subscribers. */
export interface GroupResult {
  result: ExecutionResult;
  tooLarge: boolean;
}

/**
 * The results of one event per group of subscribers (the same document, variables and rights):
 * executed and serialized by the group's first subscriber, shared by the others.
 */
export class GroupResults {
  /** Event payload -> group key -> result. */
  private readonly results = new WeakMap<object, Map<string, Promise<GroupResult>>>();
  /** The serialized form of a shared result without errors: sent as is to every socket of its group. */
  private readonly serialized = new WeakMap<ExecutionResult, string>();
  /** Small ids for documents and SocketCallers in group keys. */
  private readonly keyIds = new WeakMap<object, number>();
  private nextKeyId = 1;

  /** The event's result for a group: executed (and serialized) by the group's first subscriber. */
  of(
    payload: unknown,
    groupKey: string | undefined,
    run: () => ReturnType<typeof execute>,
  ): Promise<GroupResult> {
    const shareable = groupKey !== undefined && typeof payload === 'object' && payload !== null;
    let groups = shareable ? this.results.get(payload) : undefined;
    const cached = groups?.get(groupKey as string);
    if (cached) {
      return cached;
    }
    const produced = Promise.resolve(run()).then((result): GroupResult => {
      if (result.errors?.length) {
        return { result, tooLarge: jsonSize(result) > MAX_EVENT_BYTES };
      }
      const bytes = JSON.stringify(result);
      if (Buffer.byteLength(bytes) > MAX_EVENT_BYTES) {
        return { result, tooLarge: true };
      }
      if (shareable) {
        this.serialized.set(result, bytes);
      }
      return { result, tooLarge: false };
    });
    if (shareable) {
      if (!groups) {
        groups = new Map();
        this.results.set(payload, groups);
      }
      groups.set(groupKey, produced);
    }
    return produced;
  }

  /** The bytes of a shared result, made once for its group. */
  serializedOf(result: ExecutionResult): string | undefined {
    return this.serialized.get(result);
  }

  keyId(value: object): number {
    let id = this.keyIds.get(value);
    if (id === undefined) {
      id = this.nextKeyId++;
      this.keyIds.set(value, id);
    }
    return id;
  }
}

import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnModuleDestroy,
} from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { GraphQLSchemaHost } from '@nestjs/graphql';
import type { FastifyInstance } from 'fastify';
import {
  createSourceEventStream,
  execute,
  getOperationAST,
  GraphQLError,
  NoSchemaIntrospectionCustomRule,
  OperationTypeNode,
  specifiedRules,
  type ExecutionArgs,
  type ExecutionResult,
  type ValidationRule,
} from 'graphql';
import type { Context, Disposable, SubscribePayload } from 'graphql-ws';
import { useServer, type Extra } from 'graphql-ws/use/ws';
import { WebSocketServer } from 'ws';
import { ShutdownState } from '../http/shutdown.js';
import type { MaybeCaller } from '../identity/caller.js';
import { CredentialsService, type CredentialSession } from '../identity/credentials.service.js';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { MetricsService } from '../metrics/metrics.service.js';
import {
  CLOSE_TOO_MANY_CONNECTIONS,
  SocketLimitsService,
  type SocketRef,
} from '../rate-limit/socket-limits.service.js';
import type { GqlContext } from './context.js';
import { GraphqlContextFactory } from './context.factory.js';
import { CLOSE_CREDENTIALS_LAPSED, CurrentRights, SocketCaller } from './current-rights.js';
import { depthLimitRule } from './depth-limit.rule.js';
import { executeOrCached, isIntrospectionQuery } from './introspection-cache.js';
import { operationGate } from './operation-gate.js';
import { TrustedDocumentsPlugin } from './persisted/trusted-documents.plugin.js';
import { variablesTooLarge, variablesViolation } from './request-limits.js';
import { MAX_EVENT_BYTES, MAX_RESPONSE_BYTES, responseTooLarge } from './response-size.js';
import { sharedPayload } from './shared-event-bytes.js';
import { isAsyncIterable, jsonSize, mapEvents } from './subscription-events.js';
import { SubscriptionGroup, type GroupHooks } from './subscription-groups.js';
import { liveSourceOf } from '../events/live-source.js';
import { WsTelemetry, type SocketTelemetry, type WsOperation } from './ws-telemetry.js';
import {
  isPrecharged,
  QueuedBytes,
  RefusedEvent,
  ReplaySlots,
  setReplayGate,
} from './ws-replay.js';
import { handshakeRefusal, UpgradeRefusals } from './upgrade-refusals.js';
import { upgradeHandler } from './ws/upgrade-handler.js';
import { WsDocuments } from './ws/ws-documents.js';
import { GroupResults, type GroupResult } from './ws/group-results.js';
import { clientWentAway, credentialsLapsed, wentAway } from './ws/ws-errors.js';
import { clientValue, WsOperationHooks, type WsResultDecorator } from './ws/operation-hooks.js';

export const GRAPHQL_PATH = '/graphql';
/** Largest WebSocket message accepted (the ws default is 100 MiB). */
const WS_MAX_PAYLOAD = 64 * 1024;
/** What this server keeps on graphql-ws's per-socket `extra`. */
type SocketState = SocketTelemetry & {
  caller?: MaybeCaller;
  rights?: SocketCaller;
  /** How this socket holds its (shared) SocketCaller: released when it closes. */
  rightsHold?: { session: CredentialSession; onLapse: (reason: string) => void };
};

/**
 * GraphQL over WebSocket (`graphql-transport-ws`, graphql-ws 6) on the HTTP server's `/graphql`
 * upgrade. Apollo's HTTP pipeline does not see these operations, so the same rules are applied here:
 * credentials from `connection_init` (invalid -> close 4403), Origin check (same origin or CORS_ORIGINS),
 * validation with the depth limit and the introspection switch, anonymous callers only introspect,
 * the cost limit, error formatting, and a 64 KiB message limit.
 */
@Injectable()
export class GraphqlWsServer implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(GraphqlWsServer.name);
  private wss?: WebSocketServer;
  private disposable?: Disposable;
  private rules: readonly ValidationRule[] = [];
  /** The socket an operation's context belongs to (for per-event charges). */
  private readonly socketOf = new WeakMap<object, SocketRef>();
  /** The text of an introspection-only query, per its context: answered from the cache. */
  private readonly introspectionOf = new WeakMap<object, string>();
  /** The operation an operation's context belongs to (metrics of the subscribe step). */
  private readonly operationOf = new WeakMap<object, WsOperation>();
  /** What the operation hooks add to the answer of a query or mutation, per its context. */
  private readonly decoratorsOf = new WeakMap<object, WsResultDecorator>();
  private readonly telemetry: WsTelemetry;
  /** One SocketCaller per credential, shared by the sockets opened with it. */
  private readonly currentRights = new CurrentRights();
  /** Results of one event per group of subscribers (event payload -> group key -> result). */
  private readonly groupResults = new WeakMap<object, Map<string, Promise<GroupResult>>>();
  /** Each event's result per group of subscribers, executed once (ws/group-results.ts). */
  private readonly results = new GroupResults();
  /** Subscribers of a live source sharing document, variables and credential (subscription-groups.ts). */
  private readonly groups = new Map<string, SubscriptionGroup>();
  private readonly groupHooks: GroupHooks = {
    charge: (sockets, cost) => this.limits.chargeEvents(sockets, cost),
    serialize: (result) => this.eventPayload(result),
    sendBufferLimit: this.config.wsSendBufferBytes,
    lapsed: credentialsLapsed,
    sentErrors: (member, result) => {
      const ctx = member.ref as Context<Record<string, unknown>, SocketState>;
      this.telemetry.next(ctx.extra, member.id, result);
    },
  };
  /** The TCP stream under each WebSocket (corked while a group writes a batch of events to it). */
  private readonly transports = new WeakMap<object, Duplex>();
  private readonly onUpgrade: ReturnType<typeof upgradeHandler>;
  private documents!: WsDocuments;
  /** Replays running at once (`messageAdded(after:)`): 2 per identity, 32 on the instance. */
  private readonly replaySlots = new ReplaySlots(2, 32);
  /** Each socket's queued event bytes (per-socket streams), bounded by WS_SEND_BUFFER_BYTES. */
  private readonly queuedBytes = new WeakMap<object, QueuedBytes>();

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly adapterHost: HttpAdapterHost,
    private readonly schemaHost: GraphQLSchemaHost,
    private readonly contexts: GraphqlContextFactory,
    private readonly limits: SocketLimitsService,
    private readonly door: CredentialsService,
    private readonly shutdown: ShutdownState,
    private readonly metrics: MetricsService,
    private readonly refusals: UpgradeRefusals,
    private readonly trusted: TrustedDocumentsPlugin,
    private readonly hooks: WsOperationHooks,
  ) {
    this.onUpgrade = upgradeHandler({
      path: GRAPHQL_PATH,
      config,
      shutdown,
      limits,
      refusals,
      wss: () => this.wss,
      transports: this.transports,
    });
    this.telemetry = new WsTelemetry(
      metrics,
      () => adapterHost.httpAdapter.getInstance<FastifyInstance>().log,
      (request) => limits.clientAddress(request),
    );
  }

  onApplicationBootstrap(): void {
    const schema = this.schemaHost.schema;
    this.rules = [
      ...specifiedRules,
      depthLimitRule(),
      ...(this.config.graphqlIntrospection ? [] : [NoSchemaIntrospectionCustomRule]),
    ];
    this.documents = new WsDocuments(
      () => this.schemaHost.schema,
      () => this.rules,
      // as over HTTP: hints only in development with introspection on
      this.config.graphqlDevelopment && this.config.graphqlIntrospection,
    );
    this.wss = new WebSocketServer({ noServer: true, maxPayload: WS_MAX_PAYLOAD });
    // a handshake ws refuses (method, key, version, subprotocol header): in the envelope too
    this.wss.on('wsClientError', (err: Error, socket: Duplex, req: IncomingMessage) =>
      this.refusals.refuse(req, socket, handshakeRefusal(err.message)),
    );
    this.metrics.setSocketCounter(() => this.wss?.clients.size ?? 0);
    this.disposable = useServer<Record<string, unknown>, SocketState>(
      {
        schema,
        onConnect: async (ctx) => {
          // the credential door, as for HTTP: invalid -> 4403; refused by a credential bucket -> 4429
          const address = this.limits.clientAddress(ctx.extra.request);
          this.telemetry.log(ctx.extra);
          const answer = await this.contexts.fromConnectionParams(ctx.connectionParams, address);
          if (answer.kind === 'throttled') {
            ctx.extra.socket.close(CLOSE_TOO_MANY_CONNECTIONS, 'Too many failed credential checks');
            return false;
          }
          if (answer.kind === 'invalid') {
            return false; // 4403 Forbidden: credentials presented but invalid
          }
          const caller = answer.kind === 'caller' ? answer.caller : undefined;
          ctx.extra.caller = caller;
          this.telemetry.identified(ctx.extra, caller);
          const identity = this.limits.identityOf(caller, address);
          if (!this.limits.acquireConnection(ctx, identity)) {
            ctx.extra.socket.close(CLOSE_TOO_MANY_CONNECTIONS, 'Too many connections');
            return false;
          }
          if (answer.kind === 'caller') {
            // the caller is re-established per operation and per event; lapsed -> close 4403. Sockets
            // of one credential share it (one look-up per event, however many sockets)
            const onLapse = (why: string) => ctx.extra.socket.close(CLOSE_CREDENTIALS_LAPSED, why);
            ctx.extra.rights = this.currentRights.acquire(
              answer.caller,
              answer.session,
              onLapse,
              () =>
                new SocketCaller(
                  answer.caller,
                  answer.session,
                  this.door,
                  onLapse,
                  this.config.wsRecheckIntervalS * 1000,
                ),
            );
            ctx.extra.rightsHold = { session: answer.session, onLapse };
          }
          this.telemetry.connected(ctx.extra);
          return true;
        },
        onClose: (ctx, code, reason) => {
          const hold = ctx.extra.rightsHold;
          if (hold && ctx.extra.rights) {
            this.currentRights.release(hold.session, ctx.extra.rights, hold.onLapse);
          }
          this.limits.releaseConnection(ctx);
          // operations still being set up end by themselves (refused, or completed by graphql-ws)
          this.telemetry.closed(ctx.extra, code, reason);
        },
        onComplete: (ctx, id) => this.telemetry.completed(ctx.extra, id),
        onSubscribe: async (ctx, id, payload) => {
          // a `traceparent` in the message's extensions names the caller's trace (docs/operations.md)
          const op = this.telemetry.started(ctx.extra, id, payload.extensions?.traceparent);
          const answer = await this.prepare(ctx, payload, op);
          if (Array.isArray(answer)) {
            this.telemetry.refused(ctx.extra, op, answer);
          } else {
            this.telemetry.accepted(ctx.extra, op);
          }
          return answer;
        },
        subscribe: (args) => this.subscribeCharged(args),
        execute: (args) =>
          executeOrCached(args, this.introspectionOf.get(args.contextValue as object)),
        onError: (ctx, id, _payload, errors) => {
          if (clientWentAway(errors)) {
            return wentAway(this.logger, id, errors); // nothing wrong here, nothing left to send
          }
          this.telemetry.failed(ctx.extra, id, errors);
          return errors.map((e) => this.documents.format(e));
        },
        onNext: (ctx, id, _payload, args, result) => {
          this.telemetry.next(ctx.extra, id, result);
          // a subscription event shared by a group: the same bytes for every socket
          const bytes = this.results.serializedOf(result);
          if (bytes !== undefined) {
            return sharedPayload(ctx.extra.socket, id, bytes);
          }
          // queries and mutations: the response cap of HTTP (events are capped in subscribeCharged)
          const single =
            getOperationAST(args.document, args.operationName)?.operation !==
            OperationTypeNode.SUBSCRIPTION;
          if (single && result.data && jsonSize(result) > MAX_RESPONSE_BYTES) {
            return { errors: [this.documents.format(responseTooLarge(MAX_RESPONSE_BYTES))] };
          }
          const formatted = result.errors?.length
            ? { ...result, errors: result.errors.map((e) => this.documents.format(e)) }
            : undefined;
          // what the operation hooks add to a single answer (e.g. `extensions.deprecations`)
          const decorate = single ? this.decoratorsOf.get(args.contextValue as object) : undefined;
          return decorate ? decorate(formatted ?? result) : formatted;
        },
      },
      this.wss,
      this.config.wsKeepAliveMs,
    );
    this.adapterHost.httpAdapter.getHttpServer().on('upgrade', this.onUpgrade);
  }

  /**
   * The checks of one `subscribe` message (rights, document, authentication, cost, rate limits):
   * the execution arguments, or the errors to send. Notes the operation's name, type and cost on `op`.
   */
  private async prepare(
    ctx: Context<Record<string, unknown>, SocketState>,
    payload: SubscribePayload,
    op: WsOperation,
  ): Promise<ExecutionArgs | readonly GraphQLError[]> {
    const schema = this.schemaHost.schema;
    if (!this.limits.operationAllowed(ctx)) {
      return [this.limits.tooManyOperationsError()];
    }
    const tooLarge = variablesViolation(payload.variables);
    if (tooLarge) {
      return [variablesTooLarge(tooLarge)];
    }
    // every operation runs with the caller's current rights (the look-ups a REST request makes)
    const rights = ctx.extra.rights;
    const caller = rights ? await rights.current() : undefined;
    if (rights && !caller) {
      return [credentialsLapsed()]; // and the socket is closed with 4403
    }
    ctx.extra.caller = caller;
    const document = this.documents.parseAndValidate(payload.query);
    if (!('kind' in document)) {
      return document;
    }
    const operation = getOperationAST(document, payload.operationName);
    if (!operation) {
      return [
        new GraphQLError('Could not determine which operation to run (operationName)', {
          extensions: { code: 'OPERATION_RESOLUTION_FAILURE' },
        }),
      ];
    }
    // trusted documents, as over HTTP (persisted/trusted-documents.plugin.ts)
    const untrusted = this.trusted.refusal({ caller, source: payload.query, document, operation });
    if (untrusted) {
      return [untrusted];
    }
    // the checks an HTTP operation passes too (operation-gate.ts)
    const gate = operationGate({
      schema,
      document,
      operation,
      operationName: payload.operationName,
      variables: payload.variables,
      caller,
      source: payload.query,
    });
    this.telemetry.resolved(op, operation, gate.cost?.requested);
    if (!gate.passed) {
      return [gate.error];
    }
    const { requested, limit } = gate.cost;
    // a request from the identity's request bucket and the cost from its budget, as over HTTP
    const refused = await this.limits.chargeOperation(ctx, requested);
    if (refused) {
      return [refused];
    }
    const contextValue = this.contexts.forSocket(caller, ctx.connectionParams, rights);
    contextValue.cost = { requested, limit };
    this.socketOf.set(contextValue, ctx); // per-event charges (subscribeCharged)
    let queue = this.queuedBytes.get(ctx);
    if (!queue) {
      queue = new QueuedBytes(this.config.wsSendBufferBytes);
      this.queuedBytes.set(ctx, queue);
    }
    // a replay's pages: charged before they are read, under a slot, counted against the socket
    setReplayGate(contextValue, {
      slot: (signal) => this.replaySlots.acquire(this.limits.identityOfSocket(ctx), signal),
      charge: (count) => this.limits.chargeEvent(ctx, requested * count),
      queue,
    });
    this.operationOf.set(contextValue, op);
    const decorate = this.hooks.accepted({
      schema,
      document,
      operationName: payload.operationName,
      caller,
      clientValue: (name) => clientValue(ctx.connectionParams, ctx.extra.request, name),
    });
    if (decorate) {
      this.decoratorsOf.set(contextValue, decorate);
    }
    if (isIntrospectionQuery(document, operation)) {
      this.introspectionOf.set(contextValue, payload.query);
    }
    return {
      schema,
      document,
      operationName: payload.operationName,
      variableValues: payload.variables,
      contextValue,
    };
  }

  /**
   * graphql-js `subscribe`, with each event run under the subscriber's current rights and charged
   * before its selection runs: the operation's cost is spent from the identity's budget again for
   * every event (a subscription re-executes its selection per event), and an event payload over
   * MAX_EVENT_BYTES is replaced by an error. When the budget is used up the subscriber gets one
   * RATE_LIMITED error and the subscription completes.
   *
   * Subscribers of a live source (an EventsService topic, no replay: see live-source.ts) that share
   * the document, the operation, the variables and the rights (one credential, so one SocketCaller)
   * join a SubscriptionGroup: one listener for all of them, the rights checked, the charges made
   * and the event executed once per event, the same bytes written to every socket
   * (subscription-groups.ts). Other streams (`messageAdded(after:)`, which replays first) are mapped
   * per socket below, sharing one execution per event and group key (`serialized`,
   * shared-event-bytes.ts), the charges batched by SocketLimitsService.
   */
  private async subscribeCharged(
    args: ExecutionArgs,
  ): Promise<AsyncIterable<ExecutionResult> | ExecutionResult> {
    const source = await createSourceEventStream(args);
    const op = this.operationOf.get(args.contextValue as object);
    if (op) {
      this.telemetry.subscribed(op, isAsyncIterable(source));
    }
    if (!isAsyncIterable(source)) {
      return source;
    }
    const context = args.contextValue as GqlContext;
    const socket = this.socketOf.get(context);
    const cost = context.cost?.requested ?? 0;
    const rights = socket
      ? (socket as Context<Record<string, unknown>, SocketState>).extra?.rights
      : undefined;
    const groupKey = rights
      ? [
          this.results.keyId(rights),
          this.results.keyId(args.document),
          args.operationName ?? '',
          JSON.stringify(args.variableValues ?? {}),
        ].join('\u0000')
      : undefined;
    const live = liveSourceOf(source);
    if (live && groupKey !== undefined && socket && op) {
      // a live source (no replay): the socket joins the group of its document, variables and
      // credential, which listens once for all of them. The source itself has not started listening
      // (it does on its first next()), so dropping it loses nothing.
      void (source as AsyncIterableIterator<unknown>).return?.();
      const key = `${groupKey}\u0000${live.key}`;
      let group = this.groups.get(key);
      if (!group) {
        const created = new SubscriptionGroup(live, args, cost, this.groupHooks, () => {
          if (this.groups.get(key) === created) {
            this.groups.delete(key);
          }
        });
        this.groups.set(key, created);
        group = created;
      }
      const ws = (socket as Context<Record<string, unknown>, Extra>).extra.socket;
      return group.join(ws, socket, op.id, this.transports.get(ws));
    }
    return mapEvents(source, async (payload) => {
      if (payload instanceof RefusedEvent) {
        return { result: { errors: [payload.error] }, last: true };
      }
      if (context.refreshCaller) {
        // each event is resolved with the subscriber's current rights; once they have lapsed the
        // socket is closed (4403) and nothing more is delivered (current-rights.ts)
        const caller = await context.refreshCaller();
        if (!caller) {
          return { result: { errors: [credentialsLapsed()] }, last: true };
        }
        context.caller = caller;
      }
      // a replayed event was charged with its page, before the page was read (ws-replay.ts)
      const refused =
        socket && !isPrecharged(payload) ? await this.limits.chargeEvent(socket, cost) : undefined;
      if (refused) {
        return { result: { errors: [refused] }, last: true };
      }
      const { result, tooLarge } = await this.results.of(payload, groupKey, () =>
        execute({ ...args, rootValue: payload }),
      );
      if (tooLarge) {
        return { result: { errors: [responseTooLarge(MAX_EVENT_BYTES)] }, last: false };
      }
      return { result, last: false };
    });
  }

  /**
   * The JSON text of an event's `payload` for a group (subscription-groups.ts): its errors formatted
   * as onNext formats them, and an event over MAX_EVENT_BYTES replaced by the error saying so.
   */
  private eventPayload(result: ExecutionResult): string {
    const text = JSON.stringify(
      result.errors?.length
        ? { ...result, errors: result.errors.map((e) => this.documents.format(e)) }
        : result,
    );
    if (Buffer.byteLength(text) > MAX_EVENT_BYTES) {
      return JSON.stringify({ errors: [this.documents.format(responseTooLarge(MAX_EVENT_BYTES))] });
    }
    return text;
  }

  async onModuleDestroy(): Promise<void> {
    this.adapterHost.httpAdapter?.getHttpServer()?.off('upgrade', this.onUpgrade);
    for (const client of this.wss?.clients ?? []) {
      client.close(1001, 'Server shutting down');
    }
    await this.disposable?.dispose();
    await new Promise<void>((resolve) => (this.wss ? this.wss.close(() => resolve()) : resolve()));
    this.logger.debug('GraphQL WebSocket server closed');
  }
}

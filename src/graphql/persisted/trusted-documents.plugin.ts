import { createHash } from 'node:crypto';
import type {
  ApolloServerPlugin,
  GraphQLRequestContextDidResolveOperation,
  GraphQLRequestListener,
  GraphQLServerContext,
} from '@apollo/server';
import { Plugin } from '@nestjs/apollo';
import { Logger } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { GraphQLError, type DocumentNode, type OperationDefinitionNode } from 'graphql';
import { Counter } from 'prom-client';
import type { MaybeCaller } from '../../identity/caller.js';
import { BoundedLabel } from '../../metrics/bounded-label.js';
import { MetricsService } from '../../metrics/metrics.service.js';
import { TrustedDocumentsService } from '../../trusted-documents/trusted-documents.service.js';
import type { GqlContext } from '../context.js';
import { wantsGraphqlResponseJson } from '../media-type.js';
import { isIntrospectionOnly } from '../operation-rules.js';
import { sendGraphqlRefusal, type GraphqlPreStep } from '../request-limits.js';

/** One operation as the trust check sees it, from HTTP or WebSocket. */
export interface TrustedOperationCheck {
  caller: MaybeCaller;
  source: string;
  document: DocumentNode;
  operation: OperationDefinitionNode;
  /** `apollographql-client-name`, when the client gives one (a metric label). */
  clientName?: string;
}

/** Documents hashed already: the SHA-256 of a parsed document's text (Apollo reuses DocumentNodes). */
const bodyHashes = new WeakMap<DocumentNode, string>();

/** How many unlisted documents are logged (once each) before the log stops naming new ones. */
const MAX_LOGGED = 10_000;

function notListed(): GraphQLError {
  return new GraphQLError(
    'This operation is not in the trusted documents manifest: send its documentId (or its APQ hash), as the manifest your frontend was built with lists it',
    { extensions: { code: 'PERSISTED_QUERY_NOT_LISTED' } },
  );
}

function notFound(): GraphQLError {
  return new GraphQLError('PersistedQueryNotFound: no trusted document has this documentId', {
    extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' },
  });
}

function single(value: unknown): unknown {
  return Array.isArray(value) ? (value as unknown[])[0] : value;
}

/**
 * Trusted documents on the GraphQL transport (docs/graphql.md "Trusted documents"):
 *
 * - before Apollo (a step of the GraphQL pre-handler on /graphql, POST and GET): `{"documentId": "<id>"}` is
 *   replaced by the manifest's body (an unknown id answers PERSISTED_QUERY_NOT_FOUND), and an APQ
 *   hash without text whose body is in the manifest gets that body, so a listed operation runs by
 *   hash on any instance without registering it first;
 * - before execution, over HTTP (this plugin's didResolveOperation) and over WebSocket
 *   (graphql-ws.server.ts calls `refusal`): in `audit` mode an operation whose text is not a listed
 *   body is counted in `atrium_graphql_untrusted_operations_total{client}` and logged once per
 *   document; in `enforce` mode such an operation from a first-party caller (Basic, or a JWT from
 *   /auth/token) is refused with PERSISTED_QUERY_NOT_LISTED. API keys and OAuth tokens still send
 *   free text (counted), under the cost limits. Introspection-only operations always run.
 */
@Plugin()
export class TrustedDocumentsPlugin implements ApolloServerPlugin<GqlContext> {
  private readonly logger = new Logger('TrustedDocuments');
  private readonly untrusted: Counter<'client'>;
  private readonly clientNames = new BoundedLabel(50, 64);
  private readonly logged = new Set<string>();

  constructor(
    private readonly documents: TrustedDocumentsService,
    metrics: MetricsService,
  ) {
    this.untrusted = new Counter({
      name: 'atrium_graphql_untrusted_operations_total',
      help: 'GraphQL operations whose document is not in the trusted documents manifest (modes audit and enforce), by client',
      labelNames: ['client'],
      registers: [metrics.registry],
    });
    if (documents.mode !== 'off') {
      this.requestDidStart = () => Promise.resolve(this.listener);
    }
  }

  async serverWillStart({ schema }: GraphQLServerContext): Promise<void> {
    this.documents.useSchema(schema);
  }

  /**
   * In modes `audit` and `enforce`, one listener shared by every request; in mode `off` (fixed by
   * the configuration) none: Apollo then does not call the plugin per request at all.
   */
  readonly requestDidStart?: () => Promise<GraphQLRequestListener<GqlContext>>;

  private readonly listener: GraphQLRequestListener<GqlContext> = {
    didResolveOperation: async (rc: GraphQLRequestContextDidResolveOperation<GqlContext>) => {
      if (!rc.operation) {
        return;
      }
      const refusal = this.refusal({
        caller: rc.contextValue.caller,
        source: rc.source,
        document: rc.document,
        operation: rc.operation,
        clientName: rc.request.http?.headers.get('apollographql-client-name') ?? undefined,
      });
      if (refusal) {
        const strict = wantsGraphqlResponseJson(rc.request.http?.headers.get('accept'));
        Object.assign(refusal.extensions, { http: { status: strict ? 400 : 200 } });
        throw refusal;
      }
    },
  };

  /** The refusal of an operation under the mode, or undefined: it may run. Counts and logs. */
  refusal(op: TrustedOperationCheck): GraphQLError | undefined {
    const mode = this.documents.mode;
    if (mode === 'off' || isIntrospectionOnly(op.document, op.operation)) {
      return undefined;
    }
    let hash = bodyHashes.get(op.document);
    if (hash === undefined) {
      hash = createHash('sha256').update(op.source).digest('hex');
      bodyHashes.set(op.document, hash);
    }
    if (this.documents.byBodyHash(hash)) {
      return undefined;
    }
    const firstParty = op.caller?.method === 'basic' || op.caller?.method === 'jwt';
    const client = op.caller
      ? op.caller.method === 'api_key' || op.caller.method === 'oauth'
        ? op.caller.method
        : op.clientName
          ? `name:${this.clientNames.label(op.clientName)}`
          : 'first-party'
      : 'anonymous';
    this.untrusted.inc({ client });
    if (this.logged.size < MAX_LOGGED && !this.logged.has(hash)) {
      this.logged.add(hash);
      this.logger.warn(
        {
          sha256: hash,
          operationName: op.operation.name?.value ?? null,
          client,
          mode,
          refused: mode === 'enforce' && firstParty,
        },
        'GraphQL operation not in the trusted documents manifest',
      );
    }
    return mode === 'enforce' && firstParty ? notListed() : undefined;
  }

  /**
   * The step of the GraphQL pre-handler (request-limits.ts): `documentId` (POST body or GET query
   * string) becomes the listed body; an APQ hash alone whose body is listed gets it. False when the
   * request was answered here (unknown documentId).
   */
  readonly resolveDocument: GraphqlPreStep = (req, reply, params) => {
    const documentId = single(params.documentId);
    if (documentId !== undefined) {
      const listed = typeof documentId === 'string' ? this.documents.byId(documentId) : undefined;
      if (!listed) {
        sendGraphqlRefusal(req, reply, notFound());
        return false;
      }
      delete params.documentId;
      this.setQuery(req, params, listed.body);
      return true;
    }
    if (params.query === undefined) {
      let extensions = single(params.extensions);
      if (typeof extensions === 'string') {
        try {
          extensions = JSON.parse(extensions) as unknown;
        } catch {
          return true; // Apollo answers the malformed parameter
        }
      }
      const hash = (extensions as { persistedQuery?: { sha256Hash?: unknown } } | null)
        ?.persistedQuery?.sha256Hash;
      const listed = typeof hash === 'string' ? this.documents.byBodyHash(hash) : undefined;
      if (listed) {
        this.setQuery(req, params, listed.body);
      }
    }
    return true;
  };

  /** Apollo reads a POST's body, and a GET's query string from the URL (not `req.query`). */
  private setQuery(req: FastifyRequest, params: Record<string, unknown>, body: string): void {
    params.query = body;
    if (req.method === 'GET') {
      const at = req.raw.url?.indexOf('?') ?? -1;
      const search = new URLSearchParams(at >= 0 ? req.raw.url?.slice(at + 1) : '');
      search.delete('documentId');
      search.set('query', body);
      req.raw.url = `${at >= 0 ? req.raw.url?.slice(0, at) : req.raw.url}?${search.toString()}`;
    }
  }
}

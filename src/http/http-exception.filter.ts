import { Catch, HttpException, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DB_RETRY_AFTER_S, domainErrorOfDatabase } from '../database/db-errors.js';
import {
  codeOfStatus,
  DomainError,
  statusOf,
  WWW_AUTHENTICATE,
  type ErrorCode,
  type ErrorDetail,
} from '../common/errors.js';
import { requestTraceId } from '../telemetry/http-trace.js';

interface ErrorBody {
  error: {
    code: ErrorCode;
    message: string;
    details?: ErrorDetail[];
    request_id?: string;
    trace_id?: string;
  };
}

/** Fastify's own errors (body parsing, limits) by their code. */
function fromFastify(err: {
  code?: string;
  statusCode?: number;
  message?: string;
}): DomainError | undefined {
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new DomainError(
        'unsupported_media_type',
        'Unsupported Content-Type: send application/json',
      );
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new DomainError('payload_too_large', 'The request body exceeds 1 MiB');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new DomainError('bad_request', 'The request body is not valid JSON');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new DomainError('bad_request', 'Invalid Content-Length');
    case 'ATRIUM_BODY_SHAPE':
      // the JSON body's shape or a forbidden member (src/http/json-shape.ts), with where it is
      return new DomainError(
        'bad_request',
        err.message ?? 'Bad request',
        (err as { details?: ErrorDetail[] }).details,
      );
    default:
      break;
  }
  if (err instanceof SyntaxError && (err as { statusCode?: number }).statusCode === 400) {
    return new DomainError('bad_request', 'The request body is not valid JSON');
  }
  if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
    return new DomainError(codeOfStatus(err.statusCode), err.message ?? 'Bad request');
  }
  return undefined;
}

/** Any error -> `{error: {code, message, details?}}` with the contract's status; 500s hide internals. */
export function toDomainError(exception: unknown): DomainError | undefined {
  if (exception instanceof DomainError) {
    return exception;
  }
  if (exception instanceof HttpException) {
    const status = exception.getStatus();
    const response = exception.getResponse();
    const message =
      typeof response === 'string'
        ? response
        : (((response as { message?: unknown }).message as string | undefined) ??
          exception.message);
    return new DomainError(
      codeOfStatus(status),
      Array.isArray(message) ? message.join('; ') : String(message),
    );
  }
  if (exception && typeof exception === 'object') {
    return domainErrorOfDatabase(exception) ?? fromFastify(exception);
  }
  return undefined;
}

export function sendError(reply: FastifyReply, err: DomainError, requestId?: string): void {
  const status = statusOf(err.code);
  const body: ErrorBody = { error: { code: err.code, message: err.message } };
  if (err.details?.length) {
    body.error.details = err.details;
  }
  if (status >= 500 && requestId) {
    body.error.request_id = requestId;
  }
  const traceId = requestTraceId(reply.request);
  if (traceId !== undefined) {
    body.error.trace_id = traceId;
  }
  if (status === 401) {
    void reply.header('WWW-Authenticate', WWW_AUTHENTICATE);
  }
  if (status === 503) {
    void reply.header('Retry-After', String(DB_RETRY_AFTER_S));
  }
  void reply.code(status).header('Content-Type', 'application/json; charset=utf-8').send(body);
}

@Catch()
export class HttpExceptionFilter implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost): unknown {
    if (host.getType<string>() !== 'http') {
      return exception; // GraphQL formats its own errors
    }
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    const request = host.switchToHttp().getRequest<FastifyRequest>();
    let error = toDomainError(exception);
    if (error?.code === 'service_unavailable') {
      request.log.warn({ err: exception }, 'database unavailable');
    }
    if (!error) {
      request.log.error({ err: exception }, 'unhandled error');
      error = new DomainError(
        'internal_error',
        'Internal server error; quote the request id when reporting it',
      );
    }
    sendError(reply, error, request.id);
    return undefined;
  }
}

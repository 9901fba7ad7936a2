import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import { describe, expect, it } from 'vitest';
import { LazyRequestLogger, redactUrl } from './logging.js';

/** A pino logger like the application's (redaction, err serializer) writing lines to an array. */
function capture(level = 'info'): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(...chunk.toString('utf8').trimEnd().split('\n'));
      done();
    },
  });
  const logger = pino(
    {
      level,
      base: { pid: 1 },
      timestamp: false,
      redact: { paths: ['*.password', 'req.headers.authorization'], censor: '[redacted]' },
    },
    stream,
  );
  return { logger, lines };
}

/** The calls the application makes on `request.log` (and a few it could make). */
function exercise(log: {
  info(...a: unknown[]): void;
  warn(...a: unknown[]): void;
  error(...a: unknown[]): void;
  debug(...a: unknown[]): void;
}): void {
  log.info(
    { req: { method: 'GET', url: '/api/v1/users/x', ip: '127.0.0.1' }, res: { statusCode: 200 } },
    'request completed',
  );
  log.warn({ err: new Error('database unavailable'), body: { password: 'secret' } }, 'db');
  log.error(new Error('boom'));
  log.info('plain %s', 'message');
  log.debug({ hidden: true }, 'below the level');
}

describe('LazyRequestLogger', () => {
  it('writes exactly the lines a pino child logger writes', () => {
    const eager = capture();
    const lazy = capture();
    exercise(eager.logger.child({ request_id: 'r-1' }));
    exercise(new LazyRequestLogger(lazy.logger, { request_id: 'r-1' }));
    expect(lazy.lines.length).toBe(4);
    // error stacks differ by the line that threw: compare without them
    const strip = (line: string) => line.replace(/"stack":"(?:[^"\\]|\\.)*"/g, '"stack":""');
    expect(lazy.lines.map(strip)).toEqual(eager.lines.map(strip));
    expect(lazy.lines[0]).toContain('"pid":1,"request_id":"r-1","req":');
    expect(lazy.lines[1]).toContain('"password":"[redacted]"');
  });

  it('follows level changes, children and bindings like the child it stands for', () => {
    const { logger, lines } = capture('warn');
    const log = new LazyRequestLogger(logger, { request_id: 'r-2' });
    expect(log.isLevelEnabled('info')).toBe(false);
    expect(log.level).toBe('warn');
    log.info({ a: 1 }, 'not written');
    expect(lines).toEqual([]);
    log.level = 'info';
    expect(log.isLevelEnabled('info')).toBe(true);
    log.info({ a: 1 }, 'written');
    log.child({ op: 'x' }).info('from a child');
    expect(log.bindings()).toEqual({ request_id: 'r-2' });
    expect(lines.map((l) => JSON.parse(l) as Record<string, unknown>)).toEqual([
      { level: 30, pid: 1, request_id: 'r-2', a: 1, msg: 'written' },
      { level: 30, pid: 1, request_id: 'r-2', op: 'x', msg: 'from a child' },
    ]);
    expect(logger.level).toBe('warn'); // the parent is untouched
  });
});

describe('redactUrl', () => {
  it('hides api_key values and leaves other URLs as they are', () => {
    expect(redactUrl('/api/v1/users?api_key=abc&x=1')).toBe('/api/v1/users?api_key=[redacted]&x=1');
    expect(redactUrl('/api/v1/users?x=1&API_KEY=abc')).toBe('/api/v1/users?x=1&API_KEY=[redacted]');
    expect(redactUrl('/api/v1/users/usr_1')).toBe('/api/v1/users/usr_1');
    expect(redactUrl(undefined)).toBeUndefined();
  });
});

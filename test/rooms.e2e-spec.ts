import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from './helpers/app.js';
import { adminClient, createUser, unique, type CreatedUser } from './helpers/factories.js';
import { client, type Client } from './helpers/http.js';

describe('rooms and messages', () => {
  let t: TestApp;
  let admin: Client;
  let alice: CreatedUser;
  let guest: CreatedUser;

  beforeAll(async () => {
    t = await startApp();
    admin = await adminClient(t.url);
    [alice, guest] = await Promise.all([createUser(t.url), createUser(t.url, { role: 'GUEST' })]);
  });
  afterAll(async () => {
    await t?.close();
  });

  async function newRoom(name = unique('room-')): Promise<{ id: string; name: string }> {
    const res = await alice.client.post('/api/v1/rooms', { name });
    expect(res.status, res.text).toBe(201);
    return res.body.data;
  }

  describe('rooms', () => {
    it('creates a room: 201, Location, trimmed name, stored', async () => {
      const name = unique('general-');
      const res = await alice.client.post('/api/v1/rooms', { name: `  ${name}  ` });
      expect(res.status).toBe(201);
      expect(res.body.data).toEqual({
        id: expect.stringMatching(/^rom_[0-9A-Z]{26}$/),
        name,
        created_at: expect.any(String),
      });
      expect(res.headers.get('location')).toBe(
        `http://atrium.test/api/v1/rooms/${res.body.data.id}`,
      );
      const got = await guest.client.get(`/api/v1/rooms/${res.body.data.id}`);
      expect(got.status).toBe(200);
      expect(got.body.data).toEqual(res.body.data);
    });

    it('refuses a duplicate name with 409', async () => {
      const room = await newRoom();
      const res = await admin.post('/api/v1/rooms', { name: room.name });
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('conflict');
    });

    it.each([
      [{ name: '' }, 'name'],
      [{ name: '   ' }, 'name'],
      [{ name: 'x'.repeat(101) }, 'name'],
      [{}, 'name'],
      [{ name: 'ok', topic: 'x' }, 'topic'],
    ])('refuses %j with 422', async (body, field) => {
      const res = await alice.client.post('/api/v1/rooms', body);
      expect(res.status).toBe(422);
      expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
    });

    it('accepts a 100-character name', async () => {
      const name = unique('r').padEnd(100, 'x');
      expect((await alice.client.post('/api/v1/rooms', { name })).status).toBe(201);
    });

    it('lets an ADMIN create rooms, refuses a GUEST (403) and anonymous callers (401)', async () => {
      expect((await admin.post('/api/v1/rooms', { name: unique('adm-') })).status).toBe(201);
      expect((await guest.client.post('/api/v1/rooms', { name: unique('g-') })).status).toBe(403);
      expect((await client(t.url).post('/api/v1/rooms', { name: unique('a-') })).status).toBe(401);
    });

    it('refuses a GUEST at the route (the declared floor is USER): 403 even for an invalid name, nothing created', async () => {
      const before = (await alice.client.get('/api/v1/rooms?limit=1')).body.meta.total;
      for (const body of [{ name: unique('g-') }, { name: '' }, { name: 'x'.repeat(101) }, {}]) {
        const res = await guest.client.post('/api/v1/rooms', body);
        expect(res.status, JSON.stringify(body)).toBe(403);
        expect(res.body).toEqual({ error: { code: 'forbidden', message: expect.any(String) } });
        expect(res.headers.get('location')).toBeNull();
      }
      expect((await alice.client.get('/api/v1/rooms?limit=1')).body.meta.total).toBe(before);
    });

    it('answers OPTIONS with Allow and HEAD with the GET headers', async () => {
      const room = await newRoom();
      const options = await guest.client.options('/api/v1/rooms');
      expect(options.status).toBe(200);
      expect(options.headers.get('allow')).toBe('GET, HEAD, POST, OPTIONS');
      const messages = await guest.client.options(`/api/v1/rooms/${room.id}/messages`);
      expect(messages.headers.get('allow')).toBe('GET, HEAD, POST, OPTIONS');
      const get = await guest.client.get(`/api/v1/rooms/${room.id}`);
      const head = await guest.client.head(`/api/v1/rooms/${room.id}`);
      expect(head.status).toBe(200);
      expect(head.text).toBe('');
      expect(head.headers.get('etag')).toBe(get.headers.get('etag'));
    });

    it('answers 404 for unknown and malformed room ids', async () => {
      expect((await guest.client.get('/api/v1/rooms/rom_01ARZ3NDEKTSV4RRFFQ69G5FAV')).status).toBe(
        404,
      );
      expect((await guest.client.get('/api/v1/rooms/usr_01ARZ3NDEKTSV4RRFFQ69G5FAV')).status).toBe(
        404,
      );
      expect((await guest.client.get('/api/v1/rooms/general')).status).toBe(404);
    });

    it('lists rooms with page rules, sort, Link and ETag; GUESTs may read', async () => {
      const names = ['zeta', 'alpha', 'mu'].map((n) => unique(`${n}-`));
      for (const name of names) {
        await newRoom(name);
      }
      const all = await guest.client.get('/api/v1/rooms?limit=100');
      expect(all.status).toBe(200);
      const total = all.body.meta.total as number;
      expect(total).toBeGreaterThanOrEqual(3);
      expect(all.body.data).toHaveLength(total);
      // default order: created_at ascending, so the three newest rooms are last in creation order
      expect(all.body.data.slice(-3).map((r: { name: string }) => r.name)).toEqual(names);
      const byName = await guest.client.get('/api/v1/rooms?limit=100&sort=name');
      const sorted = [...byName.body.data.map((r: { name: string }) => r.name)];
      expect(sorted).toEqual([...sorted].sort());
      const page = await guest.client.get('/api/v1/rooms?limit=1&page=2');
      expect(page.body.data).toEqual([all.body.data[1]]);
      expect(page.headers.get('link')).toContain('rel="prev"');
      const etag = page.headers.get('etag')!;
      expect(
        (
          await guest.client.get('/api/v1/rooms?limit=1&page=2', {
            headers: { 'if-none-match': etag },
          })
        ).status,
      ).toBe(304);
      expect((await guest.client.get('/api/v1/rooms?sort=topic')).status).toBe(400);
      expect((await guest.client.get('/api/v1/rooms?limit=0')).status).toBe(400);
    });
  });

  describe('messages', () => {
    it('sends a message: 201, stored, listed', async () => {
      const room = await newRoom();
      const res = await alice.client.post(`/api/v1/rooms/${room.id}/messages`, {
        content: 'hello  world ',
      });
      expect(res.status).toBe(201);
      expect(res.body.data).toEqual({
        id: expect.stringMatching(/^msg_[0-9A-Z]{26}$/),
        room_id: room.id,
        author_id: alice.id,
        content: 'hello  world ', // content is kept as written
        created_at: expect.stringMatching(/Z$/),
      });
      const list = await guest.client.get(`/api/v1/rooms/${room.id}/messages`);
      expect(list.status).toBe(200);
      expect(list.body).toEqual({ data: [res.body.data], meta: { page: 1, limit: 20, total: 1 } });
    });

    it.each([
      [{ content: '' }, 'content'],
      [{ content: ' \n\t ' }, 'content'],
      [{ content: 'x'.repeat(4001) }, 'content'],
      [{}, 'content'],
      [{ content: 42 }, 'content'],
      [{ content: 'hi', room_id: 'x' }, 'room_id'],
    ])('refuses %j with 422 and stores nothing', async (body, field) => {
      const room = await newRoom();
      const res = await alice.client.post(`/api/v1/rooms/${room.id}/messages`, body);
      expect(res.status).toBe(422);
      expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
      expect((await alice.client.get(`/api/v1/rooms/${room.id}/messages`)).body.meta.total).toBe(0);
    });

    it('accepts 4000 characters', async () => {
      const room = await newRoom();
      const res = await alice.client.post(`/api/v1/rooms/${room.id}/messages`, {
        content: 'é'.repeat(4000),
      });
      expect(res.status).toBe(201);
      const list = await alice.client.get(`/api/v1/rooms/${room.id}/messages`);
      expect(list.body.data[0].content).toHaveLength(4000);
    });

    it('lets an ADMIN send, refuses a GUEST (403) and anonymous callers (401)', async () => {
      const room = await newRoom();
      expect((await admin.post(`/api/v1/rooms/${room.id}/messages`, { content: 'a' })).status).toBe(
        201,
      );
      expect(
        (await guest.client.post(`/api/v1/rooms/${room.id}/messages`, { content: 'g' })).status,
      ).toBe(403);
      expect(
        (await client(t.url).post(`/api/v1/rooms/${room.id}/messages`, { content: 'n' })).status,
      ).toBe(401);
      expect((await alice.client.get(`/api/v1/rooms/${room.id}/messages`)).body.meta.total).toBe(1);
    });

    it('refuses a GUEST at the route (the declared floor is USER): 403 even for an invalid body or an unknown room', async () => {
      const room = await newRoom();
      for (const [roomId, body] of [
        [room.id, { content: 'g' }],
        [room.id, { content: '' }],
        [room.id, {}],
        ['rom_01ARZ3NDEKTSV4RRFFQ69G5FAV', { content: 'g' }],
      ] as const) {
        const res = await guest.client.post(`/api/v1/rooms/${roomId}/messages`, body);
        expect(res.status, `${roomId} ${JSON.stringify(body)}`).toBe(403);
        expect(res.body).toEqual({ error: { code: 'forbidden', message: expect.any(String) } });
      }
      expect((await alice.client.get(`/api/v1/rooms/${room.id}/messages`)).body.meta.total).toBe(0);
    });

    it('answers 404 for messages of an unknown room (send and list)', async () => {
      const missing = 'rom_01ARZ3NDEKTSV4RRFFQ69G5FAV';
      expect(
        (await alice.client.post(`/api/v1/rooms/${missing}/messages`, { content: 'x' })).status,
      ).toBe(404);
      expect(
        (await alice.client.post('/api/v1/rooms/nope/messages', { content: 'x' })).status,
      ).toBe(404);
      expect((await alice.client.get(`/api/v1/rooms/${missing}/messages`)).status).toBe(404);
    });

    it('lists oldest first with page rules, -created_at, Link, and after=<id>', async () => {
      const room = await newRoom();
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const res = await alice.client.post(`/api/v1/rooms/${room.id}/messages`, {
          content: `m${i}`,
        });
        ids.push(res.body.data.id as string);
      }
      // another room's messages never show up
      const other = await newRoom();
      await alice.client.post(`/api/v1/rooms/${other.id}/messages`, { content: 'elsewhere' });

      const base = `/api/v1/rooms/${room.id}/messages`;
      const page1 = await guest.client.get(`${base}?limit=2`);
      expect(page1.body.data.map((m: { id: string }) => m.id)).toEqual(ids.slice(0, 2));
      expect(page1.body.meta).toEqual({ page: 1, limit: 2, total: 5 });
      expect(page1.headers.get('link')).toContain(
        `<http://atrium.test${base}?limit=2&page=2&cursor=`,
      );
      expect(page1.headers.get('link')).toMatch(/&cursor=[\w-]+>; rel="next"/);
      const page3 = await guest.client.get(`${base}?limit=2&page=3`);
      expect(page3.body.data.map((m: { id: string }) => m.id)).toEqual(ids.slice(4));
      const desc = await guest.client.get(`${base}?sort=-created_at`);
      expect(desc.body.data.map((m: { id: string }) => m.id)).toEqual([...ids].reverse());
      const after = await guest.client.get(`${base}?after=${ids[2]}`);
      expect(after.body.data.map((m: { id: string }) => m.id)).toEqual(ids.slice(3));
      expect(after.body.meta.total).toBe(2);
      const afterLast = await guest.client.get(`${base}?after=${ids[4]}`);
      expect(afterLast.body).toMatchObject({ data: [], meta: { total: 0 } });
    });

    it('answers 400 for bad list parameters, naming them', async () => {
      const room = await newRoom();
      const otherRoom = await newRoom();
      const foreign = (
        await alice.client.post(`/api/v1/rooms/${otherRoom.id}/messages`, { content: 'x' })
      ).body.data.id;
      for (const [query, field] of [
        ['limit=101', 'limit'],
        ['page=0', 'page'],
        ['sort=content', 'sort'],
        ['after=nope', 'after'],
        [`after=${foreign}`, 'after'],
      ]) {
        const res = await guest.client.get(`/api/v1/rooms/${room.id}/messages?${query}`);
        expect(res.status, query).toBe(400);
        expect(res.body.error.details[0].field).toBe(field);
      }
    });

    it('numbers concurrent sends without gaps or duplicates (room sequence)', async () => {
      const room = await newRoom();
      const bob = await createUser(t.url);
      const sends = Array.from({ length: 20 }, (_, i) =>
        (i % 2 ? alice.client : bob.client).post(`/api/v1/rooms/${room.id}/messages`, {
          content: `c${i}`,
        }),
      );
      const results = await Promise.all(sends);
      expect(results.every((r) => r.status === 201)).toBe(true);
      const list = await guest.client.get(`/api/v1/rooms/${room.id}/messages?limit=100`);
      expect(list.body.meta.total).toBe(20);
      const created = list.body.data.map((m: { created_at: string }) => m.created_at);
      expect(created).toEqual([...created].sort());
      // every send got its own message: 20 distinct ids and contents, as sent
      const listed = list.body.data as { id: string; content: string }[];
      expect(new Set(listed.map((m) => m.id)).size).toBe(20);
      expect(listed.map((m) => m.content).sort()).toEqual(
        Array.from({ length: 20 }, (_, i) => `c${i}`).sort(),
      );
      expect(listed.map((m) => m.id).sort()).toEqual(
        results.map((r) => r.body.data.id as string).sort(),
      );
      // the room sequence (stored, not part of the REST body) is exactly 1..20, in list order
      const ds = t.app.get(DataSource);
      const p = ds.options.type === 'postgres' ? '$1' : '?';
      const rows = await ds.query<{ id: string; seq: number | string }[]>(
        `SELECT id, seq FROM messages WHERE room_id = ${p} ORDER BY seq`,
        [room.id],
      );
      expect(rows.map((r) => Number(r.seq))).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      expect(rows.map((r) => r.id)).toEqual(listed.map((m) => m.id));
      const [stored] = await ds.query<{ last_seq: number | string }[]>(
        `SELECT last_seq FROM rooms WHERE id = ${p}`,
        [room.id],
      );
      expect(Number(stored.last_seq)).toBe(20);
    });
  });
});

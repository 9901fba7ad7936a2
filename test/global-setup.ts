import pg from 'pg';

/** On PostgreSQL, drop the per-suite schemas an earlier run left behind (each suite makes its own). */
export default async function setup(): Promise<void> {
  const url = process.env.DATABASE_URL;
  if (!url?.startsWith('postgres')) {
    return;
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ nspname: string }>(
      "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'atrium_t_%'",
    );
    for (const { nspname } of rows) {
      await client.query(`DROP SCHEMA IF EXISTS "${nspname}" CASCADE`);
    }
  } finally {
    await client.end();
  }
}

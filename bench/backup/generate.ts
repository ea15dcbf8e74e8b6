/**
 * Generates the benchmark database: a throwaway cluster (kept running) holding a recording-service
 * shaped database of about `--gb` GB. Writes the cluster's connection facts to `--out` (0600) so the
 * benchmark can use it and `stop.ts` can remove it.
 *
 *   node bench/backup/generate.ts --gb 1 --out /tmp/svcops-bench-1g.json
 */
import { writeFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { startPostgres } from '../../src/lab/lab-postgres.ts'
import { requireTools, TOOLS } from '../require-tools.ts'

requireTools('bench/backup/generate.ts', TOOLS.postgresServer)

const { values } = parseArgs({
  options: {
    gb: { type: 'string', default: '1' },
    out: { type: 'string', default: '/tmp/svcops-bench-1g.json' },
    parent: { type: 'string' },
  },
})
const targetBytes = Number(values.gb) * 1024 ** 3

const cluster = await startPostgres({ fsync: false, ...(values.parent ? { parentDir: values.parent } : {}) })
try {
  await cluster.createDatabase('recordings')
  const db = 'recordings'
  await cluster.query(
    `create table channels (id serial primary key, name text not null unique, region text not null);
   create table content (
     id bigserial primary key,
     uid uuid not null default gen_random_uuid(),
     channel_id int not null references channels(id),
     title text not null,
     started_at timestamptz not null,
     duration_ms int not null,
     size_bytes bigint not null,
     codec text not null,
     metadata jsonb not null,
     notes text
   );
   insert into channels (name, region) select 'channel-' || g, (array['eu','us','apac'])[1 + g % 3] from generate_series(1, 200) g;`,
    [],
    db,
  )
  const batch = 200_000
  for (let i = 0; ; i++) {
    await cluster.query(
      `insert into content (channel_id, title, started_at, duration_ms, size_bytes, codec, metadata, notes)
     select 1 + (g % 200),
            'Recording ' || g || ' of ' || (array['news','sport','studio','concert','interview'])[1 + g % 5] || ' ' || md5(g::text),
            timestamptz '2024-01-01' + (g || ' seconds')::interval,
            (random() * 3600000)::int,
            (random() * 1e10)::bigint,
            (array['h264','hevc','prores','av1'])[1 + g % 4],
            jsonb_build_object('camera', 'cam-' || (g % 17), 'bitrate', (random() * 50000)::int, 'tags', jsonb_build_array('live', 'hd', 'take-' || (g % 9)), 'checksum', md5(random()::text)),
            case when g % 3 = 0 then repeat('operator note: ', (1 + g % 4)::int) || md5(random()::text) else null end
     from generate_series($1::bigint, $2::bigint) g`,
      [i * batch + 1, (i + 1) * batch],
      db,
    )
    const [row] = await cluster.query<{ size: string }>('select pg_database_size(current_database())::text as size', [], db)
    const size = Number(row?.size ?? 0)
    process.stderr.write(`\r${(size / 1024 ** 2).toFixed(0)} MB`)
    if (size >= targetBytes * 0.8) break
  }
  await cluster.query(
    'create index content_started_at on content (started_at); create index content_channel on content (channel_id, started_at)',
    [],
    db,
  )
  await cluster.query('vacuum analyze', [], db)
  const [row] = await cluster.query<{ size: string }>('select pg_database_size(current_database())::text as size', [], db)
  process.stderr.write(`\ndatabase size ${(Number(row?.size) / 1024 ** 2).toFixed(0)} MB\n`)
  writeFileSync(values.out, JSON.stringify({ ...cluster.info, database: db }, null, 2), { mode: 0o600 })
} catch (error) {
  await cluster.stop()
  throw error
}

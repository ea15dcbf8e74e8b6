/**
 * The doctor's view of a host, read through a real shell on this machine (a sandboxed host's root
 * in a temp folder): the config and the log come from one command, yet the config is its exact
 * bytes (the line and column of a syntax error are counted on them) and the log is its own; checks
 * of several files run in one command and each gets its own output and exit code, as one command
 * each would give them.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { LocalTransport } from '../../src/core/runner.ts'
import { openHostView } from '../../src/recording/doctor/host-view.ts'
import type { RecordingHost } from '../../src/recording/recording-platform.ts'

let root: string
const settings = { configPath: '/etc/svc/recording.json', logPath: '/var/log/svc/recording.log' }

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'svcops-host-view-'))
  mkdirSync(join(root, 'etc/svc'), { recursive: true })
  mkdirSync(join(root, 'var/log/svc'), { recursive: true })
})

afterEach(() => {
  chmodSync(join(root, 'etc/svc'), 0o755)
  rmSync(root, { recursive: true, force: true })
})

function host(): RecordingHost {
  return {
    name: 'rec-1',
    url: 'http://127.0.0.1:1',
    config: { name: 'rec-1', url: 'http://127.0.0.1:1', root, canary: false },
    transport: new LocalTransport('rec-1'),
  }
}

it('reads the config as its exact bytes and the log of the last start, in one command', async () => {
  // Trailing blank lines, a line that looks like a marker, no final line break: all kept as they are.
  const config = '{\n  "storage": { "path": "/srv/svc" },\n  "note": "svcops-doctor-0 0"\n}\n\n\n'
  writeFileSync(join(root, settings.configPath), config)
  writeFileSync(
    join(root, settings.logPath),
    [
      '2026-11-26T09:00:00Z INFO recording service 1.4.0 starting on :8080',
      '2026-11-26T09:00:01Z INFO listening on :8080',
      '2026-11-26T10:00:00Z INFO recording service 1.5.0 starting on :8080',
      '2026-11-26T10:00:01Z FATAL configuration option x is not known to release 1.5.0',
    ].join('\n'),
  )
  const view = await openHostView(host(), settings)
  try {
    expect(view.configText).toEqual({ ok: true, text: config })
    expect(view.config?.storage?.path).toBe('/srv/svc')
    expect(view.logLines).toEqual([
      '2026-11-26T10:00:00Z INFO recording service 1.5.0 starting on :8080',
      '2026-11-26T10:00:01Z FATAL configuration option x is not known to release 1.5.0',
    ])
  } finally {
    await view.close()
  }
})

it('says why the config cannot be read, and still reads the log', async () => {
  writeFileSync(join(root, settings.logPath), '2026-11-26T10:00:01Z INFO listening on :8080\n')
  const view = await openHostView(host(), settings)
  try {
    expect(view.configText.ok).toBe(false)
    expect(view.configText.ok ? '' : view.configText.error).toContain('No such file or directory')
    expect(view.config).toBeUndefined()
    expect(view.logLines).toEqual(['2026-11-26T10:00:01Z INFO listening on :8080'])
  } finally {
    await view.close()
  }
})

it('runs a snippet for several files in one command, each with its own output and exit code', async () => {
  writeFileSync(join(root, settings.configPath), '{}')
  const view = await openHostView(host(), settings)
  try {
    const runs = await view.shEach('if [ -e "$1" ]; then printf "%s\\n\\n" "$2"; else echo "missing $2" >&2; exit 3; fi', [
      [view.path(settings.configPath), 'config'],
      [view.path('/nowhere'), 'none'],
      [view.path(settings.configPath), "it's 'quoted' $HOME"],
    ])
    expect(runs).toEqual([
      { code: 0, stdout: 'config\n\n' },
      { code: 3, stdout: '' },
      { code: 0, stdout: "it's 'quoted' $HOME\n\n" },
    ])
    expect(await view.shEach('echo never', [])).toEqual([])
  } finally {
    await view.close()
  }
})

/**
 * docs/contract.md is the list of every interface svcops relies on in the product: an endpoint, a
 * file path or a metric name in the code that talks to the product and not in the table fails
 * here, naming the file, the line and the literal.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ROOT } from '../support/cli.ts'
import { listedInterfaces, literalsOf, scanSources, unlistedLiterals } from './contract-scan.ts'

const table = listedInterfaces(readFileSync(join(ROOT, 'docs/contract.md'), 'utf8'))

describe('docs/contract.md lists every interface the code uses', () => {
  it('finds the interfaces it is meant to see (the scan is not blind)', () => {
    const texts = scanSources(ROOT).map((f) => f.text)
    expect(texts).toEqual(
      expect.arrayContaining([
        '/api/v1/content',
        '{api}/ingests/{uuid}?expand=true',
        '/etc/default/${}',
        '${}_controller_connected',
        '/api/v1/auth',
      ]),
    )
  })

  it('lists every endpoint, file path and metric name of the clients, checks, layouts and the Pulumi program', () => {
    const unlisted = unlistedLiterals(scanSources(ROOT), table).map((f) => `${f.file}:${f.line} ${f.text}`)
    expect(unlisted).toEqual([])
  })

  it('fails on a literal the table does not list: a new endpoint, file or metric', () => {
    const added = literalsOf(
      'src/live/added.ts',
      [
        'const a = `${apiPrefix(v)}/streams/${id}/health`',
        "const b = '/etc/opt/svc/other.json'",
        'const c = `${prefix}_ingest_uptime_seconds`',
        "const d = '/api/v1/content'",
      ].join('\n'),
    )
    expect(unlistedLiterals(added, table).map((f) => f.text)).toEqual([
      '${}/streams/${}/health',
      '/etc/opt/svc/other.json',
      '${}_ingest_uptime_seconds',
    ])
  })

  it('reads only the first column of the tables, so prose cannot list an interface', () => {
    expect(listedInterfaces('Text with `/api/v9/secret`.\n\n| a | b |\n|---|---|\n| `/x/listed` | `/y/not` |\n')).toEqual(['/x/listed'])
  })
})

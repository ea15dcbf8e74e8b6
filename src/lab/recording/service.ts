/**
 * Start-up of the recording service, the program each `.deb` ships (bundled into one file with
 * its release baked in). Order, as on real hosts: read and check the config, open the database,
 * refuse a newer schema, migrate, check storage, listen. Every failure logs one clear line and
 * exits non-zero, so "check the last log lines" finds the cause.
 */
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import pg from 'pg'
import { createApiServer } from './api.ts'
import { ConfigFileError, parseServiceConfig, resolveUnderRoot, type RecordingServiceConfig } from './config.ts'
import { MigrationError, migrateSchema, NewerSchemaError } from './migrations.ts'
import type { RecordingRelease } from './releases.ts'
import { RecordingStorage } from './storage.ts'
import { errorMessage } from '../../core/errors.ts'

/** What the bundle bakes in besides the release. */
export interface ServiceBuild {
  release: RecordingRelease
  /** Product folder: logs go to `<root>/var/log/<dir>/recording.log`. */
  dir: string
}

type Level = 'DEBUG' | 'INFO' | 'WARN' | 'ERROR' | 'FATAL'
const LEVELS: Level[] = ['DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL']

function readArguments(argv: string[], dir: string): { root: string; config: string; version: boolean } {
  const value = (flag: string): string | undefined => {
    const index = argv.indexOf(flag)
    return index >= 0 ? argv[index + 1] : undefined
  }
  const root = resolve(value('--root') ?? '/')
  return {
    root,
    config: resolve(value('--config') ?? resolveUnderRoot(root, `/etc/opt/${dir}/recording.json`)),
    version: argv.includes('--version'),
  }
}

/** Runs the service until SIGTERM/SIGINT. Exits the process with 1 on any start-up failure. */
export async function runService(build: ServiceBuild, argv: string[]): Promise<void> {
  const { release } = build
  const args = readArguments(argv, build.dir)
  if (args.version) {
    process.stdout.write(`${release.version}\n`)
    return
  }
  const logFile = resolveUnderRoot(args.root, `/var/log/${build.dir}/recording.log`)
  let threshold: Level = 'DEBUG'
  const log = (level: Level, message: string): void => {
    if (LEVELS.indexOf(level) < LEVELS.indexOf(threshold)) return
    // One record a line, as the product writes it: a newline or carriage return inside a message is escaped.
    const line = `${new Date().toISOString()} ${level} ${message.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/\r/g, '\\r')}\n`
    process.stderr.write(line)
    try {
      mkdirSync(dirname(logFile), { recursive: true })
      appendFileSync(logFile, line)
    } catch (error) {
      process.stderr.write(`${new Date().toISOString()} ERROR cannot write the log file ${logFile}: ${errorMessage(error)}\n`)
    }
  }
  const fail = (message: string): never => {
    log('FATAL', message)
    process.exit(1)
  }

  log('INFO', `recording service ${release.version} starting (schema ${release.schemaVersion}, root ${args.root}, config ${args.config})`)
  const config = readConfig(args.config, release, log, fail)
  threshold = config.logLevel === undefined ? 'INFO' : (config.logLevel.toUpperCase() as Level)

  const pool = new pg.Pool({ ...databaseSettings(config, args.root, fail), max: 5, connectionTimeoutMillis: 5000 })
  pool.on('error', (error) => log('ERROR', `database connection lost: ${error.message}`))
  const where = `${config.database.name} at ${config.database.host}:${config.database.port} as ${config.database.user}`
  const client = await pool.connect().catch((error: unknown) => fail(`cannot connect to database ${where}: ${errorMessage(error)}`))
  try {
    const outcome = await migrateSchema(client, release.schemaVersion, release.version, release.fault, (level, message) =>
      log(level, message),
    )
    if (outcome.applied.length === 0) log('INFO', `database schema version ${outcome.from} is current; nothing to migrate`)
    else log('INFO', `migrated the database schema from version ${outcome.from} to ${outcome.to}`)
  } catch (error) {
    if (error instanceof NewerSchemaError || error instanceof MigrationError) fail(error.message)
    fail(`database ${where}: ${errorMessage(error)}`)
  } finally {
    client.release()
  }

  if (release.fault === 'crash-at-start') fail('unhandled error while starting: cannot initialise the content index: invalid index header')
  const storage = new RecordingStorage(args.root, config)
  for (const problem of await storage.checkLocations()) log('ERROR', `recordings inaccessible: ${problem}`)
  if (release.fault === 'slow-start') {
    log('INFO', 'loading the content index')
    await delay(release.slowStartMs ?? 6000)
  }

  const server = createApiServer({ release, config, pool, storage, log })
  server.on('error', (error) => fail(`cannot listen on ${config.listen.host}:${config.listen.port}: ${error.message}`))
  server.listen(config.listen.port, config.listen.host, () =>
    log('INFO', `listening on http://${config.listen.host}:${config.listen.port}`),
  )
  const stop = (signal: string): void => {
    log('INFO', `stopping on ${signal}`)
    server.close()
    server.closeAllConnections()
    pool.end().then(
      () => process.exit(0),
      () => process.exit(0),
    )
  }
  process.once('SIGTERM', () => stop('SIGTERM'))
  process.once('SIGINT', () => stop('SIGINT'))
}

function readConfig(
  file: string,
  release: RecordingRelease,
  log: (level: Level, message: string) => void,
  fail: (message: string) => never,
): RecordingServiceConfig {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    return fail(`cannot read the configuration file ${file}: ${errorMessage(error)}`)
  }
  try {
    const { config, unknownKeys } = parseServiceConfig(text, file, release)
    for (const key of unknownKeys) log('WARN', `configuration option ${key} is not known to release ${release.version} and is ignored`)
    return config
  } catch (error) {
    if (error instanceof ConfigFileError) return fail(error.message)
    throw error
  }
}

function databaseSettings(config: RecordingServiceConfig, root: string, fail: (message: string) => never): pg.PoolConfig {
  const { host, port, name, user, passwordFile } = config.database
  let password = config.database.password
  if (passwordFile !== undefined) {
    const path = resolveUnderRoot(root, passwordFile)
    try {
      password = readFileSync(path, 'utf8').trim()
    } catch (error) {
      fail(`cannot read the database password file ${path}: ${errorMessage(error)}`)
    }
  }
  return { host, port, database: name, user, ...(password !== undefined ? { password } : {}) }
}

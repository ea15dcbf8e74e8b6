/**
 * An ARGV RECORDER named `pulumi`, put first on PATH by a test: it is not Pulumi and does nothing
 * Pulumi does. It appends the arguments it was started with, its working directory and the names
 * of its environment variables to a log, prints a canned answer for the subcommand (`version`,
 * `stack`, `preview`; empty for the others) and exits with a canned code. The tests use it only at
 * the CLI seam: to see the exact argv svcops starts, where, and with which variables.
 *
 * One opt-in exception (`applyConfigSetTo`): it then also writes the value of a `config set --path
 * KEY VALUE` into the given stack file, as Pulumi would (with `--path`, `true`/`false` become
 * booleans and integers numbers: Pulumi's adjustObjectValue), and removes the key of a `config rm
 * --path KEY`, so that a test can follow the stack file as the run's record. An answer may be given per two words (`stack-output`) besides per subcommand,
 * and for the n-th call of it (`answerNth`: counted from 0; other calls get `answer`'s).
 *
 * With `engine`, it is an in-test Pulumi for `preview`, `up`, `destroy` and `stack output` (the other
 * subcommands keep their canned answers): test/infra/engine/cli.ts runs the program of the project
 * it is started in through the in-test engine, whose Kubernetes provider applies every object to
 * the API server its KUBECONFIG names (the Kubernetes API stand-in) as pulumi-kubernetes does,
 * server-side with its own field managers, forcing only as the provider forces, and fails with the
 * provider's messages (a field conflict, a refresh the identity may not read); the checkpoint is kept
 * in the recorder's folder between calls. A call takes as long as a run of the program (tens of
 * seconds on a busy machine).
 */
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** Where the recorder keeps Node's compile cache: bin/svcops' own (checked against each file's content). */
const COMPILE_CACHE = fileURLToPath(new URL('../../node_modules/.cache/svcops', import.meta.url))

export interface RecordedCall {
  argv: string[]
  cwd: string
  envNames: string[]
}

export interface ArgvRecorder {
  /** Put this first on PATH. */
  binDir: string
  /** Sets the answer (stdout) and exit code of a subcommand, and how long it takes (a test that kills svcops meanwhile). */
  answer(
    subcommand: 'version' | 'stack' | 'stack-output' | 'preview' | 'config' | 'up',
    stdout: string,
    code?: number,
    delayMs?: number,
  ): void
  /** The answer of the `n`-th call (from 0) of a subcommand only. */
  answerNth(subcommand: 'preview' | 'stack-output', n: number, stdout: string, code?: number): void
  calls(): RecordedCall[]
}

/** The in-test Pulumi's inputs: the decrypted secure values the CLI would hand the program. */
export interface RecorderEngine {
  config?: Record<string, string>
  secretKeys?: string[]
}

export function createPulumiArgvRecorder(options: { applyConfigSetTo?: string; engine?: RecorderEngine } = {}): ArgvRecorder {
  const dir = mkdtempSync(join(tmpdir(), 'svcops-pulumi-recorder-'))
  const log = join(dir, 'calls.jsonl')
  writeFileSync(log, '')
  const script = join(dir, 'pulumi')
  writeFileSync(
    script,
    [
      `#!${process.execPath}`,
      "const fs = require('node:fs')",
      "const path = require('node:path')",
      'const argv = process.argv.slice(2)',
      `fs.appendFileSync(${JSON.stringify(log)}, JSON.stringify({ argv, cwd: process.cwd(), envNames: Object.keys(process.env).sort() }) + '\\n')`,
      // The calls before this one (it is logged already), counted per two words and per subcommand.
      `const before = fs.readFileSync(${JSON.stringify(log)}, 'utf8').split('\\n').filter(Boolean).map((l) => JSON.parse(l).argv).slice(0, -1)`,
      'const nTwo = before.filter((a) => a[0] === argv[0] && a[1] === argv[1]).length',
      'const nOne = before.filter((a) => a[0] === argv[0]).length',
      `const base = (words) => path.join(${JSON.stringify(dir)}, 'answer-' + words)`,
      "const candidates = [base(argv[0] + '-' + argv[1]) + '.' + nTwo, base(argv[0] + '-' + argv[1]), base(argv[0]) + '.' + nOne, base(argv[0])]",
      "const answer = candidates.find((c) => fs.existsSync(c + '.out')) ?? base(argv[0])",
      ...(options.applyConfigSetTo
        ? [
            `const stackFile = ${JSON.stringify(options.applyConfigSetTo)}`,
            // Loaded only by the calls that edit the stack file: every other call stays a bare start of Node.
            `const yaml = () => require(${JSON.stringify(fileURLToPath(new URL('../../node_modules/yaml', import.meta.url)))})`,
            "if (argv[0] === 'config' && argv[1] === 'set' && argv.includes('--path')) {",
            '  const YAML = yaml()',
            "  const [key, value] = argv.slice(argv.indexOf('--') + 1)",
            "  const doc = YAML.parseDocument(fs.readFileSync(stackFile, 'utf8'))",
            "  const [ns, ...rest] = key.split('.')",
            "  const typed = value === 'true' ? true : value === 'false' ? false : /^-?(0|[1-9][0-9]*)$/.test(value) ? Number(value) : value",
            "  doc.setIn(['config', ns, ...rest], typed)",
            '  fs.writeFileSync(stackFile, doc.toString())',
            '}',
            "if (argv[0] === 'config' && argv[1] === 'rm' && argv.includes('--path')) {",
            '  const YAML = yaml()',
            "  const [key] = argv.slice(argv.indexOf('--') + 1)",
            "  const doc = YAML.parseDocument(fs.readFileSync(stackFile, 'utf8'))",
            "  const [ns, ...rest] = key.split('.')",
            "  doc.deleteIn(['config', ns, ...rest])",
            '  fs.writeFileSync(stackFile, doc.toString())',
            '}',
          ]
        : []),
      ...(options.engine
        ? [
            // The in-test Pulumi plays preview, up, destroy and stack output; everything else keeps its canned
            // answer without loading the engine (its modules and the SDK's gRPC runtime: 0.7 s of CPU).
            `const engine = ${JSON.stringify({ ...options.engine, stateFile: join(dir, 'state.json') })}`,
            "const plays = ['preview', 'up', 'destroy'].includes(argv[0]) || (argv[0] === 'stack' && argv[1] === 'output')",
            'const played = !plays ? Promise.resolve(undefined) : (async () => {',
            // Node's compile cache, bin/svcops' own (0.2 s instead of 0.7 s to load the engine); this
            // script itself is left out of it, being a new file for every recorder.
            `  require('node:module').enableCompileCache?.(${JSON.stringify(COMPILE_CACHE)})`,
            `  const { runPulumi } = await import(${JSON.stringify(fileURLToPath(new URL('../infra/engine/cli.ts', import.meta.url)))})`,
            '  return runPulumi(argv, process.cwd(), process.env, engine)',
            '})()',
            'played.then((result) => {',
            '  if (result) { process.stdout.write(result.stdout); process.exitCode = result.code; return }',
            '  answerCanned()',
            '}, (error) => { process.stderr.write(String(error && error.stack || error) + "\\n"); process.exitCode = 1 })',
          ]
        : ['answerCanned()']),
      'function answerCanned() {',
      "  if (fs.existsSync(answer + '.out')) process.stdout.write(fs.readFileSync(answer + '.out'))",
      "  process.exitCode = fs.existsSync(answer + '.code') ? Number(fs.readFileSync(answer + '.code', 'utf8')) : 0",
      "  if (fs.existsSync(answer + '.delay')) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Number(fs.readFileSync(answer + '.delay', 'utf8')))",
      '}',
      '',
    ].join('\n'),
  )
  chmodSync(script, 0o755)
  return {
    binDir: dir,
    answer(subcommand: string, stdout: string, code = 0, delayMs = 0) {
      writeFileSync(join(dir, `answer-${subcommand}.out`), stdout)
      writeFileSync(join(dir, `answer-${subcommand}.code`), String(code))
      writeFileSync(join(dir, `answer-${subcommand}.delay`), String(delayMs))
    },
    answerNth(subcommand: string, n: number, stdout: string, code = 0) {
      writeFileSync(join(dir, `answer-${subcommand}.${n}.out`), stdout)
      writeFileSync(join(dir, `answer-${subcommand}.${n}.code`), String(code))
    },
    calls: () =>
      readFileSync(log, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as RecordedCall),
  }
}

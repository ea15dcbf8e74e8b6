/**
 * The lab is a development tool: it stays in the repository (the demo and the tests run on it), but
 * the product neither loads nor ships it. Nothing in src/ outside src/lab imports from it, statically
 * or dynamically, except the command registry's one seam (the lab's own command group, loaded by path
 * where src/lab exists); running any other command group loads no module of the lab; an installed
 * svcops (the files `npm pack` ships) runs without it and answers `svcops lab` in one sentence; and
 * the packages only the lab uses are devDependencies.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import ts from 'typescript'
import { afterAll, describe, expect, it } from 'vitest'
import { commandGroups } from '../../src/commands/registry.ts'
import { svcopsCommand } from '../../src/core/paths.ts'
import { ROOT } from '../support/cli.ts'

const LAB = join(ROOT, 'src', 'lab')
const inLab = (file: string): boolean => file === LAB || file.startsWith(`${LAB}/`)

/** Every .ts file under `dir`, absolute. */
function tsFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(dir, f))
}

interface ModuleReference {
  file: string
  line: number
  /** The module named by a string literal, or undefined when the argument is computed. */
  specifier: string | undefined
}

/**
 * Every module a file refers to: import and export declarations, `import type`, `typeof import()`,
 * dynamic `import()`, and calls of `require` or of a function a `createRequire` made.
 */
function moduleReferences(file: string): ModuleReference[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true)
  const found: ModuleReference[] = []
  const add = (node: ts.Node, argument: ts.Node | undefined): void => {
    found.push({
      file,
      line: source.getLineAndCharacterOfPosition(node.getStart()).line + 1,
      specifier: argument && ts.isStringLiteralLike(argument) ? argument.text : undefined,
    })
  }
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) add(node, node.moduleSpecifier)
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) add(node, node.argument.literal)
    else if (ts.isCallExpression(node)) {
      const callee = node.expression
      const isImport = callee.kind === ts.SyntaxKind.ImportKeyword
      const isRequire =
        (ts.isIdentifier(callee) && callee.text === 'require') ||
        (ts.isCallExpression(callee) && ts.isIdentifier(callee.expression) && callee.expression.text === 'createRequire')
      if (isImport || isRequire) add(node, node.arguments[0])
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

describe('nothing of the product imports the lab', () => {
  const productFiles = tsFiles(join(ROOT, 'src')).filter((f) => !inLab(f))
  const references = productFiles.flatMap(moduleReferences)
  const where = (r: ModuleReference): string => `${relative(ROOT, r.file)}:${r.line}`

  it('reads the imports it checks (the scan finds the product’s own modules)', () => {
    expect(productFiles.length).toBeGreaterThan(100)
    expect(references.filter((r) => r.specifier?.startsWith('.')).length).toBeGreaterThan(300)
    // The scan sees into the lab when it is asked to: the lab imports the product.
    expect(
      tsFiles(LAB)
        .flatMap(moduleReferences)
        .some((r) => r.specifier === '../core/errors.ts'),
    ).toBe(true)
  })

  it('has no import, export, type import, import() or require of a module under src/lab in src/ outside it', () => {
    const intoLab = references.filter((r) => r.specifier?.startsWith('.') && inLab(resolve(dirname(r.file), r.specifier)))
    expect(intoLab.map(where)).toEqual([])
  })

  it('loads a computed module only in the command registry, where the lab declares its own command group', () => {
    const computed = references.filter((r) => r.specifier === undefined)
    expect(computed.map((r) => relative(ROOT, r.file))).toEqual(['src/commands/registry.ts'])
  })
})

/**
 * Runs svcops from `root` with a module resolution hook that lists every module it loads
 * (Node's module.registerHooks); returns the exit, the output and the files loaded.
 */
function runTraced(args: string[], root = ROOT): { status: number | null; stdout: string; stderr: string; loaded: string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'svcops-trace-'))
  const log = join(dir, 'loaded')
  const hook = join(dir, 'hook.mjs')
  writeFileSync(
    hook,
    `import { registerHooks } from 'node:module'
import { writeFileSync } from 'node:fs'
const loaded = new Set()
registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); loaded.add(r.url); return r } })
process.on('exit', () => writeFileSync(${JSON.stringify(log)}, [...loaded].join('\\n')))
`,
  )
  const [node = process.execPath, ...cli] = svcopsCommand()
  const bin = join(root, 'bin', 'svcops')
  const result = spawnSync(node, ['--import', pathToFileURL(hook).href, ...cli.slice(0, -1), bin, ...args], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, NODE_DISABLE_COMPILE_CACHE: '1' },
  })
  const loaded = existsSync(log)
    ? readFileSync(log, 'utf8')
        .split('\n')
        .filter((url) => url.startsWith('file:'))
        .map((url) => new URL(url).pathname)
    : []
  rmSync(dir, { recursive: true, force: true })
  return { status: result.status, stdout: result.stdout, stderr: result.stderr, loaded }
}

describe('running svcops', () => {
  it('loads no module of the lab for any command group but the lab’s own', () => {
    for (const group of commandGroups.filter((g) => !g.commands.includes('lab'))) {
      const command = group.commands[0] ?? ''
      const run = runTraced([command, '--help'])
      expect(run.status, `${command}: ${run.stderr}`).toBe(0)
      expect(
        run.loaded.some((f) => f.endsWith('/src/commands/registry.ts')),
        command,
      ).toBe(true)
      expect(run.loaded.filter(inLab), command).toEqual([])
    }
  })

  it('loads the lab’s command group for svcops lab in a checkout', () => {
    const run = runTraced(['lab', '--help'])
    expect(run.status, run.stderr).toBe(0)
    expect(run.stdout).toMatch(/^\s+up \[options\]/m)
    expect(run.loaded).toContain(join(LAB, 'command.ts'))
  })
})

describe('an installed svcops: the files npm pack ships', () => {
  const installed = mkdtempSync(join(tmpdir(), 'svcops-installed-'))
  afterAll(() => rmSync(installed, { recursive: true, force: true }))
  const packed = (
    JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8' })) as Array<{
      files: Array<{ path: string }>
    }>
  )[0]?.files.map((f) => f.path)
  for (const path of packed ?? []) {
    mkdirSync(dirname(join(installed, path)), { recursive: true })
    copyFileSync(join(ROOT, path), join(installed, path))
  }
  // The dependencies as npm would install them beside it (the checkout's are a superset).
  symlinkSync(join(ROOT, 'node_modules'), join(installed, 'node_modules'))

  it('has neither the lab nor the demo', () => {
    expect(packed).toContain('bin/svcops')
    expect(packed).toContain('src/cli.ts')
    expect((packed ?? []).filter((p) => p.startsWith('src/lab/'))).toEqual([])
  })

  it('runs without the lab, and svcops lab says in one sentence where the lab is (exit 2, nothing started)', () => {
    const help = runTraced(['--help'], installed)
    expect(help.status, help.stderr).toBe(0)
    expect(help.stdout).toMatch(/^\s+upgrade\b/m)
    expect(help.stdout).not.toMatch(/^\s+lab\b/m)
    expect(help.loaded.filter((f) => f.startsWith(`${installed}/src/lab`))).toEqual([])
    const lab = runTraced(['lab', 'up', '--hosts', '1'], installed)
    expect(lab.status).toBe(2)
    expect(lab.stdout).toBe('')
    expect(lab.stderr).toBe(
      'svcops: svcops lab is not part of this installation: the lab is a development tool that comes with the svcops repository (clone it, then run npm install && npx svcops lab up there).\n',
    )
    expect(existsSync(join(installed, '.svcops'))).toBe(false)
    expect(existsSync(join(installed, 'stacks'))).toBe(false)
  })
})

describe('dependencies', () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>
    devDependencies: Record<string, string>
  }
  /** The packages a set of files imports (bare specifiers, by package name). */
  const packagesOf = (files: string[]): Set<string> =>
    new Set(
      files
        .flatMap(moduleReferences)
        .map((r) => r.specifier ?? '')
        .filter((s) => s && !s.startsWith('.') && !s.startsWith('node:'))
        .map((s) => (s.startsWith('@') ? s.split('/').slice(0, 2).join('/') : (s.split('/')[0] ?? s))),
    )

  it('has what only the lab imports (esbuild, jose, ...) as devDependencies', () => {
    const product = packagesOf(tsFiles(join(ROOT, 'src')).filter((f) => !inLab(f)))
    const labOnly = [...packagesOf(tsFiles(LAB))].filter((name) => !product.has(name)).sort()
    expect(labOnly).toEqual(expect.arrayContaining(['esbuild', 'jose']))
    for (const name of labOnly) {
      expect(pkg.dependencies, name).not.toHaveProperty(name)
      expect(pkg.devDependencies, name).toHaveProperty(name)
    }
  })

  it('lists neither esbuild nor jose in npm ls --omit=dev', () => {
    const tree = JSON.parse(execFileSync('npm', ['ls', '--omit=dev', '--json'], { cwd: ROOT, encoding: 'utf8' })) as {
      dependencies: Record<string, unknown>
    }
    expect(Object.keys(tree.dependencies)).toContain('commander')
    expect(Object.keys(tree.dependencies)).not.toContain('esbuild')
    expect(Object.keys(tree.dependencies)).not.toContain('jose')
  })
})

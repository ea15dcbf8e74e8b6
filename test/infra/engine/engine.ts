/**
 * A stand-in of the Pulumi engine for one run of the program: a gRPC resource monitor and engine
 * service (the SDK's own service definitions from `@pulumi/pulumi/proto`), and the program started
 * the way the nodejs language host starts it: `node <nodeargs> <@pulumi/pulumi/cmd/run> --monitor
 * ... --engine ... --project ... --stack ... --pwd ... [--dry-run] --parallel ... <main>`, with the
 * stack's configuration in PULUMI_CONFIG and its secret keys in PULUMI_CONFIG_SECRET_KEYS.
 *
 * What it records is what the engine would act on: every registration with its options (parent,
 * dependencies, provider, protect, retainOnDelete, deleteBeforeReplace, replaceOnChanges,
 * aliases), the stack outputs, and every log line. It does not diff, plan or call providers; the
 * providers' answers come from ./providers.ts and the replace rules from ./replace.ts.
 */
import { spawn } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { createRequire } from 'node:module'
import { join, resolve } from 'node:path'
import { parse as parseYaml } from 'yaml'
import { readStackConfig } from '../../../src/infra/preview.ts'
import { answer, type ResourceState } from './providers.ts'
import type { Value } from './wire.ts'

export const ROOT = resolve(import.meta.dirname, '../../..')
export const STACK_DIR = join(ROOT, 'stacks')

// The SDK's own gRPC runtime and message classes, resolved from where @pulumi/pulumi resolves them.
const sdkRequire = createRequire(join(ROOT, 'node_modules/@pulumi/pulumi/package.json'))
/* eslint-disable @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-explicit-any */
const grpc: any = sdkRequire('@grpc/grpc-js')
const resourceGrpc: any = sdkRequire('./proto/resource_grpc_pb.js')
const resourcePb: any = sdkRequire('./proto/resource_pb.js')
const engineGrpc: any = sdkRequire('./proto/engine_grpc_pb.js')
const enginePb: any = sdkRequire('./proto/engine_pb.js')
const structPb: any = sdkRequire('google-protobuf/google/protobuf/struct_pb.js')
const emptyPb: any = sdkRequire('google-protobuf/google/protobuf/empty_pb.js')
const RUN_ENTRY = sdkRequire.resolve('./cmd/run/index.js').replace(/index\.js$/, '')

type Obj = Record<string, Value>

/** One RegisterResource call as the engine received it. */
export interface Registration {
  urn: string
  type: string
  name: string
  custom: boolean
  parent: string
  inputs: Obj
  outputs: Obj
  dependencies: string[]
  provider: string
  protect: boolean | undefined
  retainOnDelete: boolean | undefined
  deleteBeforeReplace: boolean
  replaceOnChanges: string[]
  ignoreChanges: string[]
  aliases: unknown[]
  additionalSecretOutputs: string[]
  /** What the component registered with registerOutputs (components and the stack). */
  registeredOutputs?: Obj
}

export interface LogLine {
  severity: 'debug' | 'info' | 'warning' | 'error'
  message: string
  urn: string
}

export interface EngineRun {
  stack: string
  preview: boolean
  exitCode: number | null
  stdout: string
  stderr: string
  logs: LogLine[]
  registrations: Registration[]
  /** The stack's outputs (what `pulumi stack output` shows). */
  outputs: Obj
  /** The checkpoint after the run: what a next run starts from (empty after a preview, as the engine keeps none). */
  state: Map<string, ResourceState>
  /** Feature questions the SDK asked, and invokes it made. */
  features: string[]
  invokes: string[]
  /** Types the provider stand-in had no model for. */
  unknownTypes: string[]
}

export interface RunOptions {
  stack: string
  /** `pulumi preview` (dry run, unknowns for what is not known yet) or `pulumi up`. */
  preview: boolean
  /** Stack file; default stacks/Pulumi.<stack>.yaml. */
  stackFile?: string
  /** Values set with `pulumi config set [--secret]`, already decrypted (as the CLI passes them). */
  config?: Record<string, string>
  secretKeys?: string[]
  /** The checkpoint of an earlier `pulumi up`. */
  state?: Map<string, ResourceState>
  /** Extra environment of the operator's shell. */
  env?: Record<string, string>
}

const SEVERITY = ['debug', 'info', 'warning', 'error'] as const
const STACK_TYPE = 'pulumi:pulumi:Stack'

/** Pulumi.yaml as the CLI reads it: project name, main, and the nodejs runtime options. */
export function projectFile(): { name: string; main: string; nodeargs: string[]; typescript: boolean } {
  const project = parseYaml(readFileSync(join(ROOT, 'Pulumi.yaml'), 'utf8')) as {
    name: string
    main?: string
    runtime: { name: string; options?: { nodeargs?: string; typescript?: boolean } }
  }
  const options = project.runtime.options ?? {}
  return {
    name: project.name,
    main: project.main ?? '.',
    nodeargs: (options.nodeargs ?? '').split(/\s+/).filter(Boolean),
    typescript: options.typescript ?? true,
  }
}

function qualifiedType(parentUrn: string, type: string): string {
  if (!parentUrn) return type
  const parentType = parentUrn.split('::')[2] ?? ''
  return parentType === STACK_TYPE ? type : `${parentType}$${type}`
}

/** A project root with Pulumi.yaml and `stacks/Pulumi.<stack>.yaml` copied from `stackFile`. */
function stageProject(stack: string, stackFile: string): string {
  const root = mkdtempSync(join(tmpdir(), 'svcops-engine-project-'))
  copyFileSync(join(ROOT, 'Pulumi.yaml'), join(root, 'Pulumi.yaml'))
  mkdirSync(join(root, 'stacks'))
  copyFileSync(stackFile, join(root, 'stacks', `Pulumi.${stack}.yaml`))
  return root
}

/** Runs the program once under the stand-in engine. */
export async function runEngine(options: RunOptions): Promise<EngineRun> {
  const project = projectFile()
  const stackFile = options.stackFile ?? join(STACK_DIR, `Pulumi.${options.stack}.yaml`)
  // The CLI passes the project's root (Pulumi.yaml, stackConfigDir: stacks); the program reads its
  // own stack file there. A stack file given elsewhere gets a throwaway root holding it.
  const rootDirectory = options.stackFile ? stageProject(options.stack, options.stackFile) : ROOT
  const { config } = readStackConfig(stackFile)
  Object.assign(config, options.config ?? {})
  const prior = options.state ?? new Map<string, ResourceState>()
  const state = new Map<string, ResourceState>(prior)
  const run: EngineRun = {
    stack: options.stack,
    preview: options.preview,
    exitCode: null,
    stdout: '',
    stderr: '',
    logs: [],
    registrations: [],
    outputs: {},
    state,
    features: [],
    invokes: [],
    unknownTypes: [],
  }
  const byUrn = new Map<string, Registration>()
  let root = ''

  const monitor = {
    supportsFeature(call: any, cb: any) {
      const id = String(call.request.getId())
      run.features.push(id)
      const res = new resourcePb.SupportsFeatureResponse()
      res.setHassupport(['secrets', 'resourceReferences', 'outputValues', 'deletedWith', 'aliasSpecs'].includes(id))
      cb(null, res)
    },
    registerResource(call: any, cb: any) {
      const r = call.request
      const type = String(r.getType())
      const name = String(r.getName())
      const parent = String(r.getParent() || (type === STACK_TYPE ? '' : root))
      const urn = `urn:pulumi:${options.stack}::${project.name}::${qualifiedType(parent, type)}::${name}`
      const inputs = (r.hasObject() ? r.getObject().toJavaScript() : {}) as Obj
      const custom = Boolean(r.getCustom())
      const reg: Registration = {
        urn,
        type,
        name,
        custom,
        parent,
        inputs,
        outputs: {},
        dependencies: r.getDependenciesList() as string[],
        provider: String(r.getProvider()),
        protect: r.hasProtect() ? Boolean(r.getProtect()) : undefined,
        retainOnDelete: r.hasRetainondelete() ? Boolean(r.getRetainondelete()) : undefined,
        deleteBeforeReplace: Boolean(r.getDeletebeforereplace()),
        replaceOnChanges: r.getReplaceonchangesList() as string[],
        ignoreChanges: r.getIgnorechangesList() as string[],
        aliases: [...(r.getAliasurnsList() as string[]), ...(r.getAliasesList() as { toObject(): unknown }[]).map((a) => a.toObject())],
        additionalSecretOutputs: r.getAdditionalsecretoutputsList() as string[],
      }
      let id = ''
      if (custom) {
        const result = answer(type, urn, inputs, prior.get(urn), options.preview)
        if (result.unknownType) run.unknownTypes.push(type)
        id = result.id
        reg.outputs = result.outputs
        if (!options.preview) state.set(urn, { id, inputs, outputs: result.outputs })
      }
      run.registrations.push(reg)
      byUrn.set(urn, reg)
      const res = new resourcePb.RegisterResourceResponse()
      res.setUrn(urn)
      res.setId(id)
      res.setObject(structPb.Struct.fromJavaScript(reg.outputs))
      cb(null, res)
    },
    registerResourceOutputs(call: any, cb: any) {
      const urn = String(call.request.getUrn())
      const outputs = (call.request.getOutputs()?.toJavaScript() ?? {}) as Obj
      const reg = byUrn.get(urn)
      if (reg) reg.registeredOutputs = outputs
      if (reg?.type === STACK_TYPE) run.outputs = outputs
      cb(null, new emptyPb.Empty())
    },
    invoke(call: any, cb: any) {
      run.invokes.push(String(call.request.getTok()))
      cb({ code: grpc.status.UNIMPLEMENTED, details: `the stand-in engine has no invoke ${call.request.getTok()}` })
    },
    readResource(call: any, cb: any) {
      cb({ code: grpc.status.UNIMPLEMENTED, details: `the program read ${call.request.getType()}; the stand-in engine reads nothing` })
    },
    signalAndWaitForShutdown(_call: any, cb: any) {
      cb(null, new emptyPb.Empty())
    },
  }
  const engine = {
    log(call: any, cb: any) {
      const r = call.request
      run.logs.push({ severity: SEVERITY[Number(r.getSeverity())] ?? 'info', message: String(r.getMessage()), urn: String(r.getUrn()) })
      cb(null, new emptyPb.Empty())
    },
    getRootResource(_call: any, cb: any) {
      const res = new enginePb.GetRootResourceResponse()
      res.setUrn(root)
      cb(null, res)
    },
    setRootResource(call: any, cb: any) {
      root = String(call.request.getUrn())
      cb(null, new enginePb.SetRootResourceResponse())
    },
  }
  const server = new grpc.Server()
  server.addService(resourceGrpc.ResourceMonitorService, monitor)
  server.addService(engineGrpc.EngineService, engine)
  const port = await new Promise<number>((ok, fail) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error: Error | null, p: number) =>
      error ? fail(error) : ok(Number(p)),
    )
  })
  const address = `127.0.0.1:${port}`
  try {
    const args = [
      ...project.nodeargs,
      RUN_ENTRY,
      `--monitor=${address}`,
      `--engine=${address}`,
      '--organization=organization',
      `--project=${project.name}`,
      `--stack=${options.stack}`,
      `--root-directory=${rootDirectory}`,
      `--pwd=${ROOT}`,
      ...(options.preview ? ['--dry-run'] : []),
      '--parallel=16',
      project.main,
    ]
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/nonexistent',
      TMPDIR: process.env.TMPDIR ?? '/tmp',
      PULUMI_CONFIG: JSON.stringify(config),
      PULUMI_CONFIG_SECRET_KEYS: JSON.stringify(options.secretKeys ?? []),
      PULUMI_NODEJS_TYPESCRIPT: String(project.typescript),
      ...(options.env ?? {}),
    }
    const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
    child.stdout.on('data', (d: Buffer) => (run.stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (run.stderr += d.toString()))
    run.exitCode = await new Promise<number | null>((ok) => child.on('close', (code) => ok(code)))
  } finally {
    await new Promise<void>((ok) => {
      server.tryShutdown(() => ok())
    })
  }
  return run
}
/* eslint-enable @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-explicit-any */

/** The Kubernetes objects of a run (`kubernetes:*` custom resources), inputs as registered. */
export function kubeObjects(run: EngineRun): Registration[] {
  return run.registrations.filter((r) => r.custom && r.type.startsWith('kubernetes:'))
}

/** The error lines a user would see (`error: ...`), in order. */
export function errors(run: EngineRun): string[] {
  return run.logs.filter((l) => l.severity === 'error').map((l) => l.message)
}

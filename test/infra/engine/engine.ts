/**
 * A stand-in of the Pulumi engine for one run of the program: a gRPC resource monitor and engine
 * service (the SDK's own service definitions from `@pulumi/pulumi/proto`), and the program started
 * the way the nodejs language host starts it: `node <nodeargs> <@pulumi/pulumi/cmd/run> --monitor
 * ... --engine ... --project ... --stack ... --pwd ... [--dry-run] --parallel ... <main>`, with the
 * stack's configuration in PULUMI_CONFIG and its secret keys in PULUMI_CONFIG_SECRET_KEYS.
 *
 * What it records is what the engine would act on: every registration with its options (parent,
 * dependencies, provider, protect, retainOnDelete, deleteBeforeReplace, replaceOnChanges,
 * aliases), the stack outputs, and every log line; and the steps (`steps`: create, update, same,
 * delete of every custom resource against the checkpoint it started from). The providers' answers
 * come from ./providers.ts, the replace rules from ./replace.ts, the steps and the refresh from ./steps.ts.
 *
 * With `cluster: true` the Kubernetes provider is the model of pulumi-kubernetes in
 * ./kubeProvider.ts: each `kubernetes:*` object is applied (server-side, with its field manager)
 * to the API server the provider's kubeconfig names, with the environment of `env` (KUBECONFIG,
 * PULUMI_K8S_*); a preview sends the applies as dry runs; a failed step is logged as an error on
 * its resource, stops the program as the engine does, and the run exits 255 as the CLI does.
 * `refresh: true` first reads every Kubernetes object of the checkpoint (`pulumi preview|up
 * --refresh`): one gone leaves the checkpoint, one the identity may not read fails the run with
 * the API's message. `targets` limits the update to those URNs (`--target`): every other resource
 * keeps its checkpoint. Reads are modelled: a `.get` (`Deployment.get`) reads the object through
 * the provider (without `cluster`, from the checkpoint), failing with "resource '<id>' does not
 * exist" when it is not there, and a StackReference of the stack itself answers the outputs of the
 * checkpoint's last update.
 */
import { spawn } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { createRequire } from 'node:module'
import { join, resolve } from 'node:path'
import { parse as parseYaml } from 'yaml'
import { readStackConfig } from '../../../src/infra/stackConfig.ts'
import { KubeProviderModel, ProviderError } from './kubeProvider.ts'
import { detailedDiff, refreshCheckpoint, type Step } from './steps.ts'
import { answer, type ResourceState } from './providers.ts'

export { detailedDiff, type Step } from './steps.ts'
import { textOf } from '../../support/kube-fields.ts'
import { plain, type Value } from './wire.ts'

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
  /** What the engine did or would do to each custom resource, against the checkpoint it started from. */
  steps: Step[]
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
  /** The Kubernetes provider talks to the cluster its kubeconfig names (see the header). */
  cluster?: boolean
  /** Read every Kubernetes object of the checkpoint first (`--refresh`; with `cluster`). */
  refresh?: boolean
  /** Update only these URNs (`--target`). */
  targets?: string[]
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
    steps: [],
  }
  const byUrn = new Map<string, Registration>()
  let root = ''
  const stackUrn = `urn:pulumi:${options.stack}::${project.name}::${STACK_TYPE}::${project.name}-${options.stack}`
  // The environment the CLI, and so the provider, runs in.
  const cliEnv: Record<string, string> = { HOME: process.env.HOME ?? '/nonexistent', ...(options.env ?? {}) }
  /** The Kubernetes provider of a registration (its provider reference `urn::id`), with the inputs it was registered with. */
  const providers = new Map<string, { inputs: Obj; model: KubeProviderModel }>()
  const kubeOf = (providerRef: string, kept?: Obj): KubeProviderModel => {
    const urn = providerRef.split('::').slice(0, -1).join('::')
    const found = providers.get(urn)
    if (found) return found.model
    const model = new KubeProviderModel(kept ?? {}, cliEnv)
    providers.set(urn, { inputs: kept ?? {}, model })
    return model
  }
  /** A failed step: the engine reports it on the resource and stops the program. */
  let failed = false
  const fail = (urn: string, message: string, cb: any) => {
    failed = true
    run.logs.push({ severity: 'error', message: options.preview ? `Preview failed: ${message}` : message, urn })
    cb({ code: grpc.status.UNAVAILABLE, details: message })
  }
  const targeted = (urn: string) => !options.targets || options.targets.includes(urn)

  if (options.refresh && options.cluster) {
    // `--refresh`: every Kubernetes object of the checkpoint read back as the provider reads it.
    const refusals = await refreshCheckpoint(prior, state, cliEnv, run.steps)
    for (const { urn, message } of refusals)
      run.logs.push({ severity: 'error', message: `${options.preview ? 'Preview failed: ' : ''}${message}`, urn })
    if (refusals.length > 0) {
      run.exitCode = 255
      return run
    }
  }

  const monitor = {
    supportsFeature(call: any, cb: any) {
      const id = String(call.request.getId())
      run.features.push(id)
      const res = new resourcePb.SupportsFeatureResponse()
      res.setHassupport(['secrets', 'resourceReferences', 'outputValues', 'deletedWith', 'aliasSpecs'].includes(id))
      cb(null, res)
    },
    registerResource(call: any, cb: any) {
      void (async () => {
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
          // The state the diff starts from: after `--refresh`, the refreshed one (pulumi-kubernetes'
          // provider.go `Read` returns the live object pruned to the old inputs' shape as the new
          // inputs, and `Diff` compares the program's inputs with that pruned live state), so a field
          // somebody changed in the cluster shows in the diff; without a refresh, the checkpoint's.
          const before = options.refresh && options.cluster ? state.get(urn) : prior.get(urn)
          const result = answer(type, urn, inputs, before, options.preview)
          if (result.unknownType) run.unknownTypes.push(type)
          const changed = !before || result.outputs !== before.outputs
          // What the refresh found unready (or an earlier one, kept in the checkpoint): an unchanged
          // resource with initialization errors still gets an update step with no diff, to await it
          // again (pulumi/pulumi pkg/resource/deploy/step_generator.go, `generateSteps`: "If
          // resource was unchanged, but there were initialization errors, generate an empty update step").
          const initErrors = before ? state.get(urn)?.initErrors : undefined
          const unready = !!initErrors?.length
          run.steps.push({
            op: !before ? 'create' : changed || unready ? 'update' : 'same',
            urn,
            type,
            ...(before && changed ? { detailedDiff: detailedDiff(plain(before.inputs), plain(inputs)) } : {}),
            ...(before && (changed || unready) && type.startsWith('kubernetes:') ? { oldState: before } : {}),
            ...(unready ? { initErrors } : {}),
          })
          id = result.id
          reg.outputs = result.outputs
          // An unchanged resource keeps what its checkpoint holds besides (pulumi-kubernetes' `__fieldManager`, its provider).
          let kept: ResourceState = { ...(before && !changed ? before : {}), id, inputs, outputs: result.outputs }
          if (type === 'pulumi:providers:kubernetes')
            providers.set(urn, { inputs: plain(inputs) as Obj, model: new KubeProviderModel(inputs, cliEnv) })
          if (!targeted(urn) && type !== 'pulumi:providers:kubernetes') {
            // Not targeted: the checkpoint stays as it was (a resource not there yet is not created).
            reg.outputs = before?.outputs ?? {}
            id = before?.id ?? ''
            run.steps[run.steps.length - 1] = { op: 'same', urn, type }
            kept = before ?? kept
          } else if (options.cluster && type.startsWith('kubernetes:') && changed) {
            const providerInputs = providers.get(reg.provider.split('::').slice(0, -1).join('::'))?.inputs ?? {}
            try {
              const applied = await kubeOf(reg.provider, providerInputs).apply(urn, type, inputs, before, options.preview)
              const o = plain(inputs) as Obj
              const m = (o.metadata ?? {}) as Obj
              // pulumi-kubernetes' id: `namespace/name`, or the name of a cluster-scoped object (what a refresh reads back).
              id = m.namespace ? `${textOf(m.namespace)}/${textOf(m.name)}` : textOf(m.name)
              if (applied.live) {
                const { metadata, status } = applied.live as Obj & { metadata: Obj }
                reg.outputs = {
                  ...result.outputs,
                  metadata: { ...((result.outputs.metadata ?? {}) as Obj), ...metadata },
                  ...(status !== undefined ? { status } : {}),
                }
              }
              kept = { id, inputs, outputs: reg.outputs, fieldManager: applied.fieldManager, provider: providerInputs }
            } catch (error) {
              run.registrations.push(reg)
              byUrn.set(urn, reg)
              if (error instanceof ProviderError) return fail(urn, error.message, cb)
              throw error
            }
          } else if (options.cluster && unready && before && !options.preview) {
            // The empty update awaits the object again (await.go `Update` runs the awaiter): still
            // unready, it fails with the awaiter's errors — upstream after its timeout, here at once.
            const o = plain(before.outputs) as Obj
            const again = await kubeOf(reg.provider, before.provider ?? {}).refreshRead(
              type,
              textOf(o.apiVersion),
              textOf(o.kind),
              before.id,
            )
            if (again.initErrors.length) {
              run.registrations.push(reg)
              byUrn.set(urn, reg)
              const shown = before.id.split('/').at(-1) ?? before.id
              return fail(
                urn,
                `${again.initErrors.length + 1} errors occurred:\n\t* the Kubernetes API server reported that "${before.id}" failed to fully initialize or become live: '${shown}' timed out waiting to be Ready\n${again.initErrors.map((e) => `\t* ${e}`).join('\n')}`,
                cb,
              )
            }
            kept = { ...before }
            delete kept.initErrors
          }
          if (!options.preview && targeted(urn))
            state.set(urn, {
              ...kept,
              ...(reg.protect ? { protect: true } : {}),
              ...(reg.retainOnDelete ? { retainOnDelete: true } : {}),
              dependsOn: [reg.parent, reg.provider.split('::').slice(0, -1).join('::'), ...reg.dependencies].filter(Boolean),
            })
        }
        run.registrations.push(reg)
        byUrn.set(urn, reg)
        const res = new resourcePb.RegisterResourceResponse()
        res.setUrn(urn)
        res.setId(id)
        res.setObject(structPb.Struct.fromJavaScript(reg.outputs))
        cb(null, res)
      })()
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
      void (async () => {
        const r = call.request
        const type = String(r.getType())
        const name = String(r.getName())
        const id = String(r.getId())
        const parent = String(r.getParent() || root)
        const urn = `urn:pulumi:${options.stack}::${project.name}::${qualifiedType(parent, type)}::${name}`
        const props = (r.getProperties()?.toJavaScript() ?? {}) as Obj
        run.steps.push({ op: 'read', urn, type })
        let properties: Obj
        if (type === 'pulumi:pulumi:StackReference') {
          // Only the stack itself: the outputs of its checkpoint's last update.
          const own = [options.stack, `${project.name}/${options.stack}`, `organization/${project.name}/${options.stack}`]
          if (!own.includes(textOf(props.name) || id))
            return fail(urn, `unknown stack "${textOf(props.name) || id}" (the in-test engine holds only this stack)`, cb)
          properties = { name: props.name ?? id, outputs: prior.get(stackUrn)?.outputs ?? {}, secretOutputNames: [] }
        } else if (type.startsWith('kubernetes:')) {
          // `kubernetes:apps/v1:Deployment`: a `.get` sends no inputs, the type names the kind.
          const [, groupVersion = '', kind = ''] = type.split(':')
          const o = { apiVersion: groupVersion.replace(/^core\//, ''), kind }
          let live: Obj | undefined
          if (options.cluster) {
            try {
              live = await kubeOf(String(r.getProvider())).read(type, String(o.apiVersion), String(o.kind), id)
            } catch (error) {
              if (error instanceof ProviderError) return fail(urn, error.message, cb)
              throw error
            }
          } else {
            // Without a cluster the checkpoint stands for it.
            const [ns, objectName] = id.includes('/') ? id.split('/') : ['', id]
            live = [...prior.values()].find((k) => {
              const x = plain(k.outputs) as Obj & { metadata?: Obj }
              return x.kind === o.kind && x.metadata?.name === objectName && (x.metadata?.namespace ?? '') === (ns ?? '')
            })?.outputs
          }
          if (!live) return fail(urn, `resource '${id}' does not exist`, cb)
          properties = live
        } else return fail(urn, `the in-test engine reads nothing of type ${type}`, cb)
        const res = new resourcePb.ReadResourceResponse()
        res.setUrn(urn)
        res.setProperties(structPb.Struct.fromJavaScript(properties))
        cb(null, res)
      })()
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
      // Node's compile cache, the run's (vitest.config.ts): the program loads the SDK and the provider
      // SDKs again for every run, and each load compiles them anew without it. The Pulumi CLI hands
      // the program the environment it runs in, so a machine that sets NODE_COMPILE_CACHE gets the same.
      ...(process.env.NODE_COMPILE_CACHE ? { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE } : {}),
      ...(options.env ?? {}),
    }
    const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
    child.stdout.on('data', (d: Buffer) => (run.stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (run.stderr += d.toString()))
    run.exitCode = await new Promise<number | null>((ok) => child.on('close', (code) => ok(code)))
    // The CLI exits 255 when a step failed, whatever the program did after the monitor went away.
    if (failed) run.exitCode = 255
    const seen = new Set(run.registrations.map((x) => x.urn))
    if (!options.targets && !failed && run.exitCode === 0)
      for (const [urn] of prior) {
        if (urn === stackUrn || seen.has(urn)) continue
        run.steps.push({ op: 'delete', urn, type: urn.split('::')[2]?.split('$').at(-1) ?? '' })
        if (!options.preview) state.delete(urn)
      }
    if (!options.preview && !failed && run.exitCode === 0) state.set(stackUrn, { id: '', inputs: {}, outputs: run.outputs })
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

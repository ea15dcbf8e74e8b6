/**
 * A vitest setup file (vitest.config.ts `setupFiles`): the Pulumi SDK's own stack captures are
 * formatted as Node formats them, not through vite-node's source-map formatter.
 *
 * The SDK takes `new Error().stack` for every promise it makes (`debuggablePromise`, kept for its
 * leak report) and for every resource it registers (`Resource.callsites`, its source position):
 * dozens per resource. In a vitest worker each of those stacks went through vite-node's
 * `Error.prepareStackTrace`, which clones and maps every frame: a third of the CPU of rendering a
 * stack through the SDK's mock runtime (test/infra/probes and config, profiled: 2.6 s of 7.7 s). A
 * stack whose first frame is in @pulumi/pulumi gets Node's own formatting here, the text it has in
 * a process that vitest does not run (`svcops render`, the program under `pulumi up`); every other
 * stack, a test's failure included, is still mapped to the TypeScript sources.
 */
const FORMATTED = Symbol.for('svcops.test.sdkStackCaptures')
const SDK = '/node_modules/@pulumi/pulumi/'

type Prepare = (error: Error, sites: NodeJS.CallSite[]) => unknown
// V8 calls it with `this` the Error constructor.
const mapped: Prepare | undefined = Error.prepareStackTrace?.bind(Error)
const installed = (Error.prepareStackTrace as { [FORMATTED]?: boolean } | undefined)?.[FORMATTED] === true

if (mapped && !installed) {
  const prepare = (error: Error, sites: NodeJS.CallSite[]): unknown => {
    if (!sites[0]?.getFileName()?.includes(SDK)) return mapped(error, sites)
    const header = error.message ? `${error.name}: ${error.message}` : error.name
    // A CallSite's toString is V8's own line of a stack: what the stack has without prepareStackTrace.
    return header + sites.map((site) => `\n    at ${(site as { toString(): string }).toString()}`).join('')
  }
  Object.defineProperty(prepare, FORMATTED, { value: true })
  Error.prepareStackTrace = prepare
}

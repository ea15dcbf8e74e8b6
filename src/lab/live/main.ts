/**
 * The entry of every live component's program (bundled once; each package ships it with its own
 * `build.json`): reads the build, the arguments and the environment file, and runs the component.
 */
import { readFileSync } from 'node:fs'
import { runController } from './controller.ts'
import { runMember } from './member.ts'
import { componentContext, type LiveBuild } from './runtime.ts'

/** Runs the component described by `buildFile` with `argv`. */
export async function runLiveComponent(buildFile: string, argv: string[]): Promise<void> {
  const build = JSON.parse(readFileSync(buildFile, 'utf8')) as LiveBuild
  const ctx = componentContext(build, argv)
  if (argv.includes('--version')) {
    process.stdout.write(`${build.version}\n`)
    return
  }
  await (build.component === 'system-controller' ? runController(ctx) : runMember(ctx))
}

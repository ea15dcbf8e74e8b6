// Whether dist/ holds a build of the sources as they are now: dist/sources.json (written by
// scripts/build.ts) lists every file the bundle was made from with its size and modification time.
// Plain JavaScript with no imports of the project, so bin/svcops.js can use it before anything loads.
import { readFileSync, statSync } from 'node:fs'
import { URL } from 'node:url'

/** The build's entry URL when every source matches its record, else undefined. `root` is the project folder's URL. */
export function currentBuild(root) {
  let manifest
  try {
    manifest = JSON.parse(readFileSync(new URL('dist/sources.json', root), 'utf8'))
  } catch {
    return undefined // no build (a checkout without `npm install`)
  }
  for (const [file, seen] of Object.entries(manifest.inputs)) {
    const now = statSync(new URL(file, root), { throwIfNoEntry: false })
    if (!now || now.size !== seen.size || now.mtimeMs !== seen.mtimeMs) return undefined
  }
  return new URL(`dist/${manifest.entry}`, root)
}

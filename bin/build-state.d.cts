/** The build in dist/: the bundle and its code cache (paths). */
export interface Build {
  entry: string
  cache: string
}
/** The build when every source matches dist/sources.json, else undefined. `root` is the project folder. */
export function currentBuild(root: string): Build | undefined
/** Loads the bundle (with its code cache unless `useCache` is false). */
export function loadBuild(
  build: Build,
  options?: { useCache?: boolean },
): {
  exports: { run(argv?: string[]): Promise<void>; main(argv: string[]): Promise<number> }
  script: import('node:vm').Script
  cacheRejected: boolean
}

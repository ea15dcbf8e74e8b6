/** The build's entry URL when every source matches dist/sources.json, else undefined. `root` is the project folder's URL. */
export function currentBuild(root: URL): URL | undefined

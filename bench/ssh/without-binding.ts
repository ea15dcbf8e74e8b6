// `node --import bench/ssh/without-binding.ts ...`: ssh2 does not find its native crypto binding
// and falls back on Node's crypto API, as on a machine where `npm install` could not build it.
// For bench/ssh/binding.ts only.
import module from 'node:module'

module.registerHooks({
  resolve(specifier, context, next) {
    if (specifier.endsWith('sshcrypto.node'))
      throw Object.assign(new Error(`Cannot find module '${specifier}'`), { code: 'MODULE_NOT_FOUND' })
    return next(specifier, context)
  },
})

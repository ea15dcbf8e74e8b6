/**
 * `svcops auth check`: logs in to the environment's manager, exchanges the session for an access
 * token with the requested scopes, prints what was granted and until when (never a token), logs out.
 */
import type { Command } from 'commander'
import { environmentOf, printResult, showProgress } from './context.ts'

export function register(program: Command): void {
  const auth = program.command('auth').description("Check the credentials and scopes svcops uses at an environment's manager.")

  auth
    .command('check')
    .description('Log in, exchange the session for an access token with the requested scopes, print granted scopes and expiry, log out.')
    .option('-s, --scope <scope...>', "scopes to request (default: the recording service's read and write scopes of the environment)")
    .addHelpText(
      'after',
      `
Exits 1 with one sentence when the manager refuses the credentials or grants fewer scopes than
requested. Prints no token: logout ends the session, and an access token stays valid until it expires.

Examples:
  svcops auth check --env lab
  svcops auth check --env prod --scope urn:svc:recorder:content:read --json`,
    )
    .action(async (options: { scope?: string[] }, command: Command) => {
      const { checkAuth } = await import('../clients/manager-check.ts')
      const env = await environmentOf(command)
      const stop = showProgress(command)
      try {
        const report = await checkAuth(env, options.scope)
        printResult(command, { ok: true, ...report }, () =>
          [
            `Logged in to ${report.manager} (auth API ${report.apiRevision}) as ${report.email}.`,
            `Granted scopes: ${report.granted.join(' ')}`,
            `Access token expires in ${report.expiresIn} s (at ${report.tokenExpiresAt}); session expires at ${report.sessionExpiresAt}.`,
            'Logged out (the access token itself stays valid until it expires).',
          ].join('\n'),
        )
      } finally {
        stop()
      }
    })
}

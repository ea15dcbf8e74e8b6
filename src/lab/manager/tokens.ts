/**
 * Access tokens of the manager emulator: ES256-signed JWTs with a `kid`, verifiable by lab services
 * through the published JWKS. Claims: iss (the manager's base URL), aud (the applications the granted
 * scopes belong to: `urn:<app>:<module>` of each `urn:<app>:<module>:<area>:<action>` scope), sub (the
 * user's e-mail), sid (the session), scope (space-separated granted scopes), iat, exp, jti. A resource
 * server checks `aud`, so a token meant for one application is refused by another.
 */
import { randomUUID } from 'node:crypto'
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JSONWebKeySet } from 'jose'

export const TOKEN_ALGORITHM = 'ES256'

export interface AccessTokenClaims {
  issuer: string
  email: string
  sessionId: string
  scopes: string[]
  /** The `aud` claim (`audiencesOf(scopes)`); absent when no scope names an application. */
  audience?: string[]
  /** Unix seconds. */
  issuedAt: number
  /** Unix seconds. */
  expiresAt: number
}

export interface TokenSigner {
  readonly kid: string
  /** The public key set served at /.well-known/jwks.json. */
  readonly jwks: JSONWebKeySet
  sign(claims: AccessTokenClaims): Promise<string>
}

/** Creates a fresh signing key pair; the private key never leaves this process. */
export async function createTokenSigner(): Promise<TokenSigner> {
  const { privateKey, publicKey } = await generateKeyPair(TOKEN_ALGORITHM)
  const kid = randomUUID()
  const jwk = await exportJWK(publicKey)
  const jwks: JSONWebKeySet = { keys: [{ ...jwk, kid, alg: TOKEN_ALGORITHM, use: 'sig' }] }
  return { kid, jwks, sign: (claims) => signAccessToken(privateKey, kid, claims) }
}

/** The applications scopes are for: `urn:<app>:<module>` of each URN-style scope (seed: `urn:<app>:<module>:<area>:<action>`). */
export function audiencesOf(scopes: string[]): string[] {
  return [...new Set(scopes.flatMap((s) => (/^urn:[^:\s]+:[^:\s]+:/.test(s) ? [s.split(':').slice(0, 3).join(':')] : [])))]
}

function signAccessToken(key: CryptoKey, kid: string, claims: AccessTokenClaims): Promise<string> {
  const jwt = new SignJWT({ sid: claims.sessionId, scope: claims.scopes.join(' ') }).setProtectedHeader({
    alg: TOKEN_ALGORITHM,
    kid,
    typ: 'JWT',
  })
  if (claims.audience?.length) jwt.setAudience(claims.audience.length === 1 ? (claims.audience[0] ?? '') : claims.audience)
  return jwt
    .setIssuer(claims.issuer)
    .setSubject(claims.email)
    .setIssuedAt(claims.issuedAt)
    .setExpirationTime(claims.expiresAt)
    .setJti(randomUUID())
    .sign(key)
}

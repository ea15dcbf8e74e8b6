/**
 * Access tokens of the manager emulator: ES256-signed JWTs with a `kid`, verifiable by lab services
 * through the published JWKS. Claims: iss (the manager's base URL), sub (the user's e-mail), sid
 * (the session), scope (space-separated granted scopes), iat, exp, jti.
 */
import { randomUUID } from 'node:crypto'
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JSONWebKeySet } from 'jose'

export const TOKEN_ALGORITHM = 'ES256'

export interface AccessTokenClaims {
  issuer: string
  email: string
  sessionId: string
  scopes: string[]
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

function signAccessToken(key: CryptoKey, kid: string, claims: AccessTokenClaims): Promise<string> {
  return new SignJWT({ sid: claims.sessionId, scope: claims.scopes.join(' ') })
    .setProtectedHeader({ alg: TOKEN_ALGORITHM, kid, typ: 'JWT' })
    .setIssuer(claims.issuer)
    .setSubject(claims.email)
    .setIssuedAt(claims.issuedAt)
    .setExpirationTime(claims.expiresAt)
    .setJti(randomUUID())
    .sign(key)
}

/**
 * @module stateless-mcp/bearer
 * OAuth bearer tokens for an MCP server (MCP authorization: the server is an OAuth 2.1 resource
 * server). For the front door, {@link bearerAuth} makes the `authenticate` hook of
 * `createMcpServer` and {@link protectedResourceMetadataHandler} serves the RFC 9728 document its
 * challenges name. The parts, for servers that compose their own HTTP face: {@link TokenVerifier}
 * (JWT signature with an algorithm allow-list, issuer, exact audience, lifetime, scopes with a
 * hierarchy), {@link RemoteJwks} (the issuer's keys, cached, refetched on an unknown `kid`),
 * {@link authenticateBearer} (one request's credentials to a caller or a refusal) and
 * {@link Challenges} (the 400/401/403/503 answers with their `WWW-Authenticate`). Runtime-neutral:
 * Web standards and `jose`, the package's one dependency.
 */
export { bearerAuth, type BearerAuthOptions } from './bearer/front-door-auth.ts'
export {
  protectedResourceMetadata,
  protectedResourceMetadataHandler,
  resourceMetadataUrl,
  type ProtectedResourceMetadata,
  type ProtectedResourceMetadataOptions,
} from './bearer/resource-metadata.ts'
export {
  authenticateBearer,
  tokenPrincipal,
  type BearerAuth,
  type BearerCaller,
  type BearerCredentials,
} from './bearer/authenticate.ts'
export {
  Challenges,
  refusalResponse,
  type AuthRefusal,
  type ChallengesOptions,
} from './bearer/challenges.ts'
export {
  ASYMMETRIC_ALGORITHMS,
  CLOCK_TOLERANCE_SECONDS,
  InvalidTokenError,
  SECRET_ALGORITHMS,
  TokenVerifier,
  VERIFIED_CACHE_SIZE,
  type TokenVerifierOptions,
  type VerifiedToken,
} from './bearer/token-verifier.ts'
export {
  boundedText,
  DEFAULT_JWKS_COOLDOWN_MS,
  DEFAULT_JWKS_MAX_AGE_MS,
  DEFAULT_JWKS_TIMEOUT_MS,
  KeysUnavailableError,
  MAX_JWKS_BYTES,
  RemoteJwks,
  type RemoteJwksOptions,
} from './bearer/jwks.ts'
export { expandScopes, mergeScopes, tokenScopes, type ScopeImplications } from './bearer/scopes.ts'

/**
 * The part of `oidc-provider` (which ships no types) the test authorization server uses
 * (`authorization-server.ts`); see the package's docs/README.md for the full configuration.
 */
declare module 'oidc-provider' {
  import type { Server } from 'node:http'

  export interface ResourceServerInfo {
    scope: string
    audience?: string
    accessTokenTTL?: number
    accessTokenFormat?: 'opaque' | 'jwt'
    jwt?: { sign?: { alg: string } }
  }

  export interface Configuration {
    jwks?: { keys: object[] }
    cookies?: { keys: string[] }
    clients?: object[]
    features?: {
      devInteractions?: { enabled: boolean }
      resourceIndicators?: {
        enabled: boolean
        defaultResource?: (ctx: unknown, client: unknown) => string | undefined
        useGrantedResource?: (ctx: unknown, model: unknown) => boolean
        getResourceServerInfo?: (
          ctx: unknown,
          resourceIndicator: string,
          client: unknown
        ) => ResourceServerInfo
      }
    }
  }

  export default class Provider {
    constructor(issuer: string, configuration?: Configuration)
    listen(port: number, host: string, callback: () => void): Server
  }

  export const errors: { InvalidTarget: new (description?: string) => Error }
}

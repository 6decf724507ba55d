/**
 * The conformance fixture (`../fixture-replica.ts`) as a Netlify Function on every path, as
 * `src/netlify.ts` serves the notes app: `npm run start:fixture:netlify` builds it as Netlify does
 * and serves it on this machine (`scripts/netlify-build.ts`, `scripts/lambda-url.ts`).
 */
import { openFixture } from '../fixture-replica.ts'

const { app } = await openFixture(process.env)

export default (request: Request): Response | Promise<Response> => app.fetch(request)

export const config = { path: '/*' }

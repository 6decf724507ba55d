/**
 * The notes server as a Netlify Function (`src/netlify.ts`), on every path of the site: `/mcp`,
 * the health routes, the OAuth metadata and the share approval pages.
 */
import { serveNetlify } from '../../src/netlify.ts'

export default serveNetlify

export const config = { path: '/*' }

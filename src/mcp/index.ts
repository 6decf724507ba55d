/**
 * @module stateless-mcp
 * The engine's public entry: define tools, resources and prompts, and serve them.
 */
export { definitions, text, toolError, structured } from './definitions.ts'

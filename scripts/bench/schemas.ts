/**
 * @module scripts/bench/schemas
 * The zod schemas of the benchmark tools, shared by our server and the official SDK's so both
 * validate exactly the same inputs and outputs. Built once per server process, at module load.
 */
import * as z from 'zod'

export const EchoInput = z.object({ text: z.string() })
export const ConfirmForm = z.object({ confirm: z.boolean() })
export const NoInput = z.object({})
export const SearchInput = z.strictObject({
  query: z.string().max(500),
  limit: z.int().min(1).max(50).default(10),
})
const SearchHit = z.object({
  id: z.string(),
  uri: z.string(),
  title: z.string(),
  tags: z.array(z.string()),
  version: z.int(),
  updatedAt: z.string(),
  excerpt: z.string(),
})
export const SearchOutput = z.object({
  notes: z.array(SearchHit),
  nextCursor: z.string().optional(),
})

/**
 * @module notes/deps
 * `NotesDeps`: what the notes application hands every handler as `ctx.deps` (the store, the event bus,
 * the public base URL and the clock). Built per deployment by `src/app.ts`; the tools, resources,
 * prompts and completions next to this module only read it.
 */
import type { EventBus } from 'stateless-mcp'
import type { NotesStore } from './store.ts'

export interface NotesDeps {
  notes: NotesStore
  bus: EventBus
  /** Public base URL of this server, without a trailing slash (links to the share pages). */
  baseUrl: string
  /** Clock in milliseconds since the epoch (note timestamps, share expiry). */
  now: () => number
}

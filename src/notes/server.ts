/**
 * @module notes/server
 * The notes MCP server: what the application hands every handler (`NotesApp`), and
 * `createNotesServer()`, which puts the tools, resources, prompts and completions of the modules next to
 * it into one engine server, built once at startup. Advertises resource list changes and subscriptions
 * (published on the event bus by `changes.ts`) and logging (the `notes-db` logger of `search_notes`).
 * The HTTP wiring lives in `src/app.ts`; the approval pages in `routes/share.ts`.
 */
import type { EventBus } from '../mcp/events.ts'
import { createMcpServer, type McpServer } from '../mcp/server.ts'
import { deleteNotesByTag } from './bulk-tools.ts'
import { createNoteFromTemplate, deleteNote, summarizeNotes } from './interactive-tools.ts'
import { reviewNote, weeklyDigest } from './prompts.ts'
import { helpResource, noteTemplate } from './resources.ts'
import { shareNote } from './share-tool.ts'
import type { NotesStore } from './store.ts'
import { createNote, getNote, listTags, searchNotes, updateNote } from './tools.ts'

/** What every notes handler receives as `ctx.app`. */
export interface NotesApp {
  notes: NotesStore
  bus: EventBus
  /** Public base URL of this server, without a trailing slash (links to the share pages). */
  baseUrl: string
  /** Clock in milliseconds since the epoch (note timestamps, share expiry). */
  now: () => number
}

const INSTRUCTIONS = [
  'Personal notes in markdown with tags. Find notes with search_notes (ids look like n_…), read one',
  'with get_note or the note://{id} resource, write with create_note and update_note (pass the version',
  'you read). delete_note, create_note_from_template and share_note ask the user first; summarize_notes',
  "uses the host's model when the client offers sampling. notes://help explains more.",
].join(' ')

export function createNotesServer(): McpServer<NotesApp> {
  return createMcpServer<NotesApp>({
    info: { name: 'notes-mcp', version: '0.1.0' },
    instructions: INSTRUCTIONS,
    tools: [
      createNote,
      getNote,
      updateNote,
      searchNotes,
      listTags,
      deleteNote,
      deleteNotesByTag,
      createNoteFromTemplate,
      summarizeNotes,
      shareNote,
    ],
    resources: [helpResource],
    resourceTemplates: [noteTemplate],
    prompts: [reviewNote, weeklyDigest],
    listChanged: { resources: true },
    subscribe: true,
    logging: true,
  })
}

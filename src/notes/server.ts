/**
 * @module notes/server
 * `createNotesServer()` puts the tools, resources, prompts and completions of the modules next to it
 * into one compiled engine server, built once at startup (`import_notes` and `export_notes` run as
 * tasks when the handler serves them: `task-tools.ts`). Advertises resource list changes and
 * subscriptions (published on the event bus by `changes.ts`) and logging (the `notes-db` logger of
 * `search_notes`). What handlers receive as `ctx.deps` is `NotesDeps` (`deps.ts`); the HTTP wiring
 * lives in `src/app.ts`, the approval pages in `routes/share.ts`.
 */
import { type CompiledServer, compileServer } from 'stateless-mcp/compose'
import type { NotesDeps } from './deps.ts'
import { deleteNotesByTag } from './bulk-tools.ts'
import { createNoteFromTemplate, deleteNote, summarizeNotes } from './interactive-tools.ts'
import { reviewNote, weeklyDigest } from './prompts.ts'
import { helpResource, noteTemplate } from './resources.ts'
import { METHOD_SCOPES } from './scopes.ts'
import { shareNote } from './share-tool.ts'
import { exportNotes, importNotes } from './task-tools.ts'
import { createNote, getNote, listTags, searchNotes, updateNote } from './tools.ts'

const INSTRUCTIONS = [
  'Personal notes in markdown with tags. Find notes with search_notes (ids look like n_…), read one',
  'with get_note or the note://{id} resource, write with create_note and update_note (pass the version',
  'you read). delete_note, create_note_from_template and share_note ask the user first; summarize_notes',
  "uses the host's model when the client offers sampling. import_notes and export_notes move many",
  'notes at once as markdown (as tasks, for clients that support them). notes://help explains more.',
].join(' ')

export function createNotesServer(): CompiledServer<NotesDeps> {
  return compileServer<NotesDeps>({
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
      importNotes,
      exportNotes,
    ],
    resources: [helpResource],
    resourceTemplates: [noteTemplate],
    prompts: [reviewNote, weeklyDigest],
    listChanged: { resources: true },
    subscribe: true,
    logging: true,
    scopes: METHOD_SCOPES,
  })
}

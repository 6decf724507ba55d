/**
 * @module tests/support/greet-tool
 * The tool of the README's example server, for the front door's tests: `greet` answers
 * `Hello, <name>`, asking the person's name (elicitation) when the call lacks it, so a call that
 * omits it is a sealed round of two requests.
 */
import * as z from 'zod'
import { text, tool } from 'stateless-mcp'

export const greet = tool({
  name: 'greet',
  description: 'Greets a person, asking the name when it is missing.',
  input: z.object({ name: z.string().optional() }),
  async run({ name }, ctx) {
    if (!name) {
      const answer = await ctx.elicit('name', {
        message: 'What is your name?',
        schema: z.object({ name: z.string() }),
      })
      if (answer.action !== 'accept') return text('Hello, whoever you are')
      name = answer.content.name
    }
    return text(`Hello, ${name}`)
  },
})

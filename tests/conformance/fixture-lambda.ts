/**
 * @module tests/conformance/fixture-lambda
 * The conformance fixture (`fixture-replica.ts`) as a Lambda function URL's handler in the
 * RESPONSE_STREAM invoke mode, through Hono's Lambda adapter as `src/lambda.ts` serves the notes
 * app: `npm run start:fixture:lambda` serves it on this machine (`scripts/lambda-url.ts`).
 */
import { streamHandle } from 'hono/aws-lambda'
import { openFixture } from './fixture-replica.ts'

const { app } = await openFixture(process.env)

export const handler = streamHandle(app)

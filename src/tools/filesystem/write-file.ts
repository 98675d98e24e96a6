/** write_file: creates or overwrites a file atomically, creating parent directories as needed. */
import fs from 'node:fs/promises';
import { z } from 'zod';
import type { PathPolicy } from '../../security/workspace.js';
import { defineTool, fail, ok } from '../types.js';
import { writeFileContained } from './contained-write.js';

export interface WriteFileToolOptions {
  policy: PathPolicy;
}

const parameters = z.object({
  path: z.string().describe('File to write: relative to the workspace, absolute, or starting with ~.'),
  content: z.string().describe('The complete new content of the file.'),
});

export function countLines(text: string): number {
  if (text === '') return 0;
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}

export function createWriteFileTool(options: WriteFileToolOptions) {
  return defineTool({
    name: 'write_file',
    description:
      'Create a file or overwrite it with the given content. Parent directories are created. ' +
      'To change part of an existing file, prefer edit_file.',
    parameters,
    async execute(args) {
      const resolved = options.policy.resolve(args.path, 'write');
      if (!resolved.ok) return fail(resolved.error);
      const existing = await fs.stat(resolved.path).catch(() => undefined);
      if (existing?.isDirectory()) return fail(`${args.path} is a directory; give a file path.`);
      try {
        await writeFileContained(options.policy, resolved.path, args.content);
      } catch (error) {
        return fail(`Could not write ${args.path}: ${error instanceof Error ? error.message : String(error)}`);
      }
      const bytes = Buffer.byteLength(args.content, 'utf8');
      const verb = existing ? 'Overwrote' : 'Created';
      return ok(`${verb} ${args.path}: wrote ${bytes} bytes (${countLines(args.content)} lines).`);
    },
  });
}

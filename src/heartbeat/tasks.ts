/** Reads the `## Active Tasks` section of HEARTBEAT.md: the tasks the heartbeat should run. */
import { WorkspaceFs } from '../security/workspace-fs.js';

/** Task lines under `## Active Tasks` (comments and blank lines ignored); empty when there is nothing to do. */
export function activeTasks(markdown: string): string[] {
  const lines = markdown.replace(/<!--[\s\S]*?-->/g, '').split('\n');
  const start = lines.findIndex((line) => /^##\s+active tasks\s*$/i.test(line.trim()));
  if (start === -1) return [];
  const tasks: string[] = [];
  for (const line of lines.slice(start + 1)) {
    if (/^#{1,2}\s/.test(line.trim())) break;
    const text = line.trim().replace(/^[-*]\s+(\[ \]\s+)?/, '');
    if (text && !/^\[x\]/i.test(text)) tasks.push(text);
  }
  return tasks;
}

/** HEARTBEAT.md through the workspace-file layer: a link out of the workspace or a FIFO throws, never is read. */
export function readActiveTasks(workspace: string): string[] {
  const text = new WorkspaceFs(workspace).readTextIfExistsSync('HEARTBEAT.md', { maxBytes: 1024 * 1024 });
  return text === undefined ? [] : activeTasks(text);
}

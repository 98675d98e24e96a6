/**
 * Who owns a piece of shared state (a running turn in a session file): this process's pid plus its start time, so a
 * later process that happens to get the same pid is not mistaken for the owner. The start time is the kernel's
 * (`/proc/<pid>/stat` field 22, clock ticks since boot); where /proc is missing, only the pid is compared.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';

export const processOwnerSchema = z.object({ pid: z.int().positive(), start: z.string().optional() });
export type ProcessOwner = z.infer<typeof processOwnerSchema>;

/** This process, as recorded in a lease. */
export function currentOwner(): ProcessOwner {
  const start = startTimeOf(process.pid);
  return start === undefined ? { pid: process.pid } : { pid: process.pid, start };
}

export function isCurrentProcess(owner: ProcessOwner): boolean {
  const me = currentOwner();
  return owner.pid === me.pid && (owner.start === undefined || me.start === undefined || owner.start === me.start);
}

/** Whether the recorded owner still runs (the same process, not a newer one with its pid). */
export function ownerAlive(owner: ProcessOwner): boolean {
  if (!pidExists(owner.pid)) return false;
  const stat = statOf(owner.pid);
  if (stat?.state === 'Z' || stat?.state === 'X') return false; // killed, not yet reaped by its parent
  return owner.start === undefined || stat === undefined || stat.start === owner.start;
}

function pidExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function startTimeOf(pid: number): string | undefined {
  return statOf(pid)?.start;
}

function statOf(pid: number): { state: string; start: string } | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may contain spaces or ')': count fields after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const [state, start] = [fields[0], fields[19]]; // fields 3 and 22 overall
  return state && start ? { state, start } : undefined;
}

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { upstreamHome } from './upstream-homes.js';

describe('upstreamHome', () => {
  it('unpacks each archive with its recorded HOME pointed at the temp copy', () => {
    for (const name of ['pyhome', 'pyhome-agentonly', 'py030home'] as const) {
      const home = upstreamHome(name);
      try {
        expect(existsSync(home.configPath)).toBe(true);
        if (name !== 'py030home') {
          const marker = readFileSync(
            join(home.dataDir, 'sessions', '4e0b97c4dd20245b3ed3fb23ec954aa1', '.workspace'),
            'utf8',
          );
          expect(marker).toContain(home.home);
          expect(marker).not.toContain('/home/pyuser');
        }
      } finally {
        home.cleanup();
      }
      expect(existsSync(home.home)).toBe(false);
    }
  });
});

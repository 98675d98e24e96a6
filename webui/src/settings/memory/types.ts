/** The memory API's answers (src/webui/memory.ts). */
export interface MemoryFile {
  path: string;
  exists: boolean;
  content: string;
  size: number;
  truncated: boolean;
  error: string | null;
}

export interface MemoryCommit {
  sha: string;
  short_sha: string;
  title: string;
  message: string;
  date: string;
  parent: string | null;
  can_restore: boolean;
}

export interface MemoryCommitDetail extends MemoryCommit {
  files: { path: string; status: 'added' | 'deleted' | 'modified'; added: number; removed: number }[];
  diff: string;
  diff_truncated: boolean;
}

export interface HistoryRow {
  cursor: number;
  timestamp: string;
  content: string;
  truncated: boolean;
  session_key: string | null;
}

export interface HistoryAnswer {
  query: string;
  total: number;
  matched: number;
  entries: HistoryRow[];
}

/** The search tools: content search (grep) and file discovery (find_files). */
export { createFindFilesTool, DEFAULT_FIND_HEAD_LIMIT, type FindFilesToolOptions } from './find-files.js';
export { createGrepTool, DEFAULT_GREP_HEAD_LIMIT, type GrepToolOptions } from './grep.js';
